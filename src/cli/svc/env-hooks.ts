// Variables that make a program load or run other code: a vault variable such as
// NODE_OPTIONS=--import=data:… would run code in every Node program `svc run` starts, so a key
// with entries:write would become code execution on the machine. `svc run` refuses them unless
// named with --allow-env. The list is in docs/cli.md; keep both in step.

/** Exact names (compared in upper case: harmless to refuse a lower-case twin). */
export const HOOK_NAMES: readonly string[] = [
  // Node.js, Bun, Deno
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_REPL_EXTERNAL_MODULE',
  'NODE_EXTRA_CA_CERTS',
  'NODE_TLS_REJECT_UNAUTHORIZED',
  'BUN_OPTIONS',
  'BUN_CONFIG',
  'DENO_DIR',
  // Shells
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PROMPT_COMMAND',
  'PS4',
  'IFS',
  'ZDOTDIR',
  'PATH',
  // Python
  'PYTHONSTARTUP',
  'PYTHONPATH',
  'PYTHONHOME',
  'PYTHONUSERBASE',
  'PYTHONINSPECT',
  'PYTHONBREAKPOINT',
  'PYTHONWARNINGS',
  // Perl, Ruby, PHP, Lua
  'PERL5OPT',
  'PERL5LIB',
  'PERLLIB',
  'PERL5DB',
  'RUBYOPT',
  'RUBYLIB',
  'PHPRC',
  'PHP_INI_SCAN_DIR',
  'LUA_INIT',
  'LUA_PATH',
  'LUA_CPATH',
  // Java
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'CLASSPATH',
  // Git, SSH, OpenSSL, glibc
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_EXEC_PATH',
  'GIT_ASKPASS',
  'GIT_PROXY_COMMAND',
  'GIT_EXTERNAL_DIFF',
  'SSH_ASKPASS',
  'OPENSSL_CONF',
  'OPENSSL_ENGINES',
  'SSLKEYLOGFILE',
  'GCONV_PATH',
]

/** Whole families: the dynamic loaders (LD_PRELOAD, LD_AUDIT, DYLD_INSERT_LIBRARIES…), bash's exported functions, Git's config. */
export const HOOK_PREFIXES: readonly string[] = ['LD_', 'DYLD_', 'BASH_FUNC_', 'GIT_CONFIG']

const NAMES = new Set(HOOK_NAMES)
const escape = (name: string) => name.replace(/[^A-Z0-9_]/g, '\\$&')
const PREFIX = new RegExp(`^(?:${HOOK_PREFIXES.map(escape).join('|')})`)
/**
 * Any line that is a hook name or starts with a hook prefix. Run once over all the names joined by
 * newlines: a name that is a hook (in upper case) is a whole line of that text, so this finds
 * every one; a name holding a line break may only add a false alarm, which the exact check sorts out.
 */
const ANY_LINE = new RegExp(`^(?:(?:${HOOK_NAMES.map(escape).join('|')})$|${HOOK_PREFIXES.map(escape).join('|')})`, 'm')

export function isHook(name: string): boolean {
  const upper = name.toUpperCase()
  return NAMES.has(upper) || PREFIX.test(upper)
}

/**
 * The hook variables among `names` not allowed by --allow-env (exact names), sorted. svc run
 * checks every variable of the vault (thousands) once, before the JIT warms up: one regular
 * expression over them all first (native code), and the exact check per name only when it finds
 * a candidate.
 */
export function refusedHooks(names: readonly string[], allowed: ReadonlySet<string>): string[] {
  if (!ANY_LINE.test(names.join('\n').toUpperCase())) return []
  const refused: string[] = []
  for (const name of names) if (isHook(name) && !allowed.has(name)) refused.push(name)
  return refused.sort()
}
