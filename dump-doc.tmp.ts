import { startTestServer, removeDir } from '/work/wt-ops-api/test/support/server'
const s = await startTestServer()
const doc = await (await fetch(s.url + '/api/openapi')).json()
await Bun.write('/tmp/doc-after.json', JSON.stringify(doc, null, 2))
await s.stop(); removeDir(s.dataDir)
