// The entry of the served file (GET /cli/svc). Not main.ts itself: its `#!/usr/bin/env bun` line,
// on a bundle's entry, makes Bun wrap the output in a function only Bun calls.
//
// `svc run` sends its export request first and loads the rest of the CLI (main.ts and all it
// imports: node:child_process, node:crypto, every command) while the vault answers: on Node, that
// loading is a good part of the start-up, and the vault's answer takes as long.
import { startRun } from './run-plan'

void startRun(process.argv.slice(2)).then(() => require('./main'))
