// svc run's checks over thousands of variables take shortcuts (one regular expression over all
// the names, Object.assign for the environment): each must answer as the plain per-name rule.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { HOOK_NAMES, HOOK_PREFIXES, isHook, refusedHooks } from '../../src/cli/svc/env-hooks'
import { childEnvironment } from '../../src/cli/svc/run'

const byRule = (names: string[], allowed: Set<string>) => names.filter((name) => isHook(name) && !allowed.has(name)).sort()

const hookish = fc.oneof(
  fc.constantFrom(...HOOK_NAMES).map((name) => name.toLowerCase()),
  fc.constantFrom(...HOOK_NAMES),
  fc.tuple(fc.constantFrom(...HOOK_PREFIXES), fc.string({ maxLength: 6 })).map(([prefix, rest]) => prefix.toLowerCase() + rest),
  fc.constantFrom('NODE_OPTIONS\n', 'X\nNODE_OPTIONS', 'PATH\r', 'ſHELLOPTS', 'pyThonpath', 'LD', 'XLD_PRELOAD', 'NODE_OPTIONSX'),
  fc.string({ maxLength: 12 }),
  fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,20}$/),
)

describe('refusedHooks', () => {
  test('finds exactly the names the per-name rule refuses, among thousands or few', () => {
    fc.assert(
      fc.property(
        fc.array(hookish, { maxLength: 40 }),
        fc.array(fc.stringMatching(/^SERVICE_\d{1,4}_[A-Z]{1,8}$/), { maxLength: 2000 }),
        fc.boolean(),
        (odd, plain, allowSome) => {
          const names = [...plain, ...odd]
          const allowed = new Set(allowSome ? odd.slice(0, 3) : [])
          expect(refusedHooks(names, allowed)).toEqual(byRule(names, allowed))
        },
      ),
      { numRuns: 200 },
    )
  })

  test('a hook name among 2,000 others, in any case, is refused; none is not', () => {
    const names = Array.from({ length: 2000 }, (_, i) => `SERVICE_${i}_TOKEN`)
    expect(refusedHooks(names, new Set())).toEqual([])
    expect(refusedHooks([...names, 'node_options', 'LD_AUDIT'], new Set())).toEqual(['LD_AUDIT', 'node_options'])
    expect(refusedHooks([...names, 'node_options', 'LD_AUDIT'], new Set(['LD_AUDIT']))).toEqual(['node_options'])
  })
})

describe('childEnvironment', () => {
  test('its own variables win unless --override; SVC_TOKEN only with --pass-token; nothing undefined', () => {
    const own = { HOME: '/home/a', SVC_TOKEN: 'svc_secret', SHARED: 'mine', GONE: undefined }
    const vault = { SHARED: 'vault', NEW: 'n', toString: 'kept as a name', constructor: 'too' }
    expect(childEnvironment(vault, false, own)).toEqual({ HOME: '/home/a', SHARED: 'mine', NEW: 'n', toString: 'kept as a name', constructor: 'too' })
    expect(childEnvironment(vault, true, own)).toEqual({ HOME: '/home/a', SHARED: 'vault', NEW: 'n', toString: 'kept as a name', constructor: 'too' })
    expect(childEnvironment(vault, false, own, true)).toMatchObject({ SVC_TOKEN: 'svc_secret' })
    expect(childEnvironment({ SVC_TOKEN: 'from-the-vault' }, false, own)).toEqual({ HOME: '/home/a', SHARED: 'mine', SVC_TOKEN: 'from-the-vault' })
  })
})
