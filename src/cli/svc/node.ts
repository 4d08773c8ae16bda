// The entry of the served file (GET /cli/svc). Not main.ts itself: its `#!/usr/bin/env bun` line,
// on a bundle's entry, makes Bun wrap the output in a function only Bun calls.
//
// `svc run` sends its export request first and loads the rest of the CLI (main.ts and all it
// imports: node:child_process, node:crypto, every command) while the vault answers: on Node, that
// loading is a good part of the start-up, and the vault's answer takes as long. The rest comes as
// text (SVC_REST, set by the build: src/web/cli-bundle.ts), compiled only then: V8 parses every
// function of a script when it compiles it, so as code of this file it would delay the request.
import { startRun } from './run-plan'

declare const SVC_REST: string

void startRun(process.argv.slice(2)).then(() => {
  // The file's own path from argv: a bundler may replace __filename with the build's.
  const file = process.argv[1] ?? 'svc'
  // node:vm too only now: loading it is a few tenths of a millisecond.
  const { runInThisContext } = require('node:vm') as typeof import('node:vm')
  const rest = runInThisContext(`(function (exports, require, module) {${SVC_REST}\n})`, { filename: file })
  const module = { exports: {} }
  rest(module.exports, require, module)
})
