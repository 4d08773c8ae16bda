// `bun run build:cli [-- --target=bun-<os>-<arch>]`: the svc command as one executable with Bun
// inside. Without --target it is for this machine (dist/svc); with one, for another machine
// (dist/svc-<os>-<arch>, .exe for Windows): Bun fetches that target's runtime from the npm
// registry. Machines with Node 20+ or Bun need no executable: the vault serves /cli/svc.
import { join } from 'node:path'

const TARGETS = ['bun-linux-x64', 'bun-linux-arm64', 'bun-darwin-x64', 'bun-darwin-arm64', 'bun-windows-x64', 'bun-windows-arm64']
const root = join(import.meta.dir, '..')
const target = process.argv.find((arg) => arg.startsWith('--target='))?.slice('--target='.length)
if (target !== undefined && !TARGETS.includes(target)) {
  console.error(`build:cli: --target must be one of ${TARGETS.join(', ')}, got ${target}`)
  process.exit(2)
}
const outfile = join(root, 'dist', target ? `svc-${target.slice(4)}${target.includes('windows') ? '.exe' : ''}` : 'svc')
const args = ['build', '--compile', '--minify', ...(target ? [`--target=${target}`] : ['--bytecode']), join(root, 'src/cli/svc/main.ts'), '--outfile', outfile]
const proc = Bun.spawnSync([process.execPath, ...args], { stdout: 'inherit', stderr: 'inherit' })
if (proc.exitCode !== 0) process.exit(proc.exitCode ?? 1)
console.log(`built ${outfile}`)
