// The entry of the served file (GET /cli/svc). Not main.ts itself: its `#!/usr/bin/env bun` line,
// on a bundle's entry, makes Bun wrap the output in a function only Bun calls.
import './main'
