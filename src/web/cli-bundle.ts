// The `svc` command as one JavaScript file for Node 20+ and Bun, served at GET /cli/svc so that
// any machine with either installs it with one curl line. `bun run build` embeds it (prebuilt.ts);
// a server run from the sources bundles it once, on the first request.
import { join } from 'node:path'
import { prebuiltWeb } from './prebuilt'

const SVC = join(import.meta.dir, '..', 'cli', 'svc')

/** One entry bundled for Node as CommonJS, without a Bun shebang or Bun's `// @bun` pragma. */
async function bundle(entry: string, define: Record<string, string> = {}): Promise<string> {
  const result = await Bun.build({ entrypoints: [join(SVC, entry)], target: 'node', format: 'cjs', minify: true, define })
  if (!result.success) throw new Error(`svc bundle failed: ${result.logs.map(String).join('\n')}`)
  return (await result.outputs[0].text()).replace(/^#![^\n]*\n/, '').replace(/^\/\/ @bun[^\n]*\n/, '')
}

/**
 * Bundles src/cli/svc for Node (which Bun runs as well), with a node shebang. CommonJS, because
 * Node before 20.19 reads a file without an extension as CommonJS (an `import` is a syntax
 * error there), and later ones try CommonJS first and parse an ES module twice. Two parts: what
 * svc run needs to send its request (node.ts), and the whole CLI as a string in it (rest.ts),
 * compiled once the request is sent.
 */
export async function buildCliScript(): Promise<Uint8Array<ArrayBuffer>> {
  const rest = await bundle('rest.ts')
  const hash = new Bun.CryptoHasher('sha256').update(rest).digest('hex').slice(0, 32)
  const text = await bundle('node.ts', { SVC_REST: JSON.stringify(rest), SVC_REST_HASH: JSON.stringify(hash) })
  return new TextEncoder().encode(`#!/usr/bin/env node\n${text}`) as Uint8Array<ArrayBuffer>
}

export interface CliScript {
  bytes: Uint8Array<ArrayBuffer>
  /** A strong ETag of the bytes, for conditional requests (computed once with them). */
  etag: string
}

let pending: Promise<CliScript> | undefined

/** The served file and its ETag, once per process; a failed build is tried again on the next request. */
export function cliScript(): Promise<CliScript> {
  if (!pending) {
    pending = (prebuiltWeb?.cli ? Bun.file(prebuiltWeb.cli).bytes() : buildCliScript()).then((bytes) => ({
      bytes,
      etag: `"${new Bun.CryptoHasher('sha256').update(bytes).digest('hex').slice(0, 32)}"`,
    }))
    pending.catch(() => {
      pending = undefined
    })
  }
  return pending
}
