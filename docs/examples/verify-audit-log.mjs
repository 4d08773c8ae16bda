// An independent audit log verifier written from docs/audit.md alone: no dependencies (node:fs
// and node:crypto only; runs under node or bun). Exit 0 when the log holds, 1 when it does not.
//   SVC_MASTER_KEY=<base64> node verify-audit-log.mjs LOG ANCHOR.json [KEYED_SINCE]
// ANCHOR.json: the log's anchor (a vault file's `auditChain`, or audit.chain.json); KEYED_SINCE:
// audit.chain.json's `keyedSince` (for a vault's log). Without the key, keyed lines are not checked;
// nor are lines keyed before a master key rotation (their keys are sealed in accounts.json).
import { createHash, createHmac, hkdfSync } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'

const [logPath, anchorPath, folderKeyedSince] = process.argv.slice(2)
const anchor = JSON.parse(readFileSync(anchorPath, 'utf8'))
const master = process.env.SVC_MASTER_KEY ? Buffer.from(process.env.SVC_MASTER_KEY, 'base64') : null
const key = master && Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'svc-vault:audit-chain', 32))
const keyId = key && createHmac('sha256', key).update('svc-vault audit key id').digest('hex').slice(0, 16)
let unchecked = !key
const since = [anchor.keyedSince, folderKeyedSince].filter(Boolean).sort()[0] ?? null
const fail = (why) => {
  console.log(`FAIL ${why}`)
  process.exit(1)
}

// Whole lines end with "\n"; anything after a zero byte, and after the last newline, is not a line.
const missing = !existsSync(logPath)
let bytes = missing ? Buffer.alloc(0) : readFileSync(logPath)
if (bytes.indexOf(0) >= 0) bytes = bytes.subarray(0, bytes.indexOf(0))
const end = bytes.lastIndexOf(0x0a) + 1
const torn = bytes.length - end
const lines = end === 0 ? [] : bytes.subarray(0, end - 1).toString('utf8').split('\n')

const parsed = lines.map((text) => {
  let event
  try {
    event = JSON.parse(text)
  } catch {
    return null
  }
  if (typeof event?.prev !== 'string' || typeof event.hash !== 'string' || event.hash.length !== 64) return null
  const suffix = `,"hash":"${event.hash}"}`
  if (!text.endsWith(suffix)) return null
  if (event.chain !== undefined && (event.chain !== 'hmac-sha256' || typeof event.key !== 'string')) return null
  const body = text.slice(0, -suffix.length) + '}'
  const keyed = event.chain === 'hmac-sha256'
  const ours = keyed && key && event.key === keyId
  if (keyed && !ours) unchecked = true
  const computed = !keyed ? createHash('sha256').update(body, 'utf8').digest('hex') : ours ? createHmac('sha256', key).update(body, 'utf8').digest('hex') : null
  return { event, keyed, computed }
})

let expected = anchor.checkpoint ?? anchor.start
let from = 0
// A compaction that recorded its checkpoint but did not replace the file yet.
const at = parsed.findIndex((p) => p?.event.hash === anchor.checkpoint)
if (anchor.checkpoint && parsed[0]?.event.prev !== anchor.checkpoint && at >= 0) from = at + 1
let keyingBegan = false
for (let i = from; i < parsed.length; i++) {
  const p = parsed[i]
  if (!p) fail(`line ${i + 1} is not an audit event`)
  if (p.keyed) keyingBegan = true
  else if (keyingBegan) fail(`line ${i + 1} is not keyed, after a keyed line`)
  else if (since && typeof p.event.time === 'string' && p.event.time >= since) fail(`line ${i + 1} is not keyed, though written after keying began`)
  if (p.computed !== null && p.computed !== p.event.hash) fail(`line ${i + 1} does not match its hash`)
  if (p.event.prev !== expected) fail(`line ${i + 1} does not follow the line before it`)
  expected = p.event.hash
}

// The anchor's head: the line `lines` lines after the start (or, in older anchors, anywhere).
const count = parsed.length - from
const base = anchor.checkpoint ?? anchor.start
if (anchor.head && anchor.head !== base) {
  if (anchor.lines === undefined) {
    if (!parsed.slice(from).some((p) => p.event.hash === anchor.head)) fail('the log no longer reaches its anchor')
  } else if (!(count >= anchor.lines && parsed[from + anchor.lines - 1].event.hash === anchor.head)) {
    if (missing) fail(`the log is missing; its anchor records ${anchor.lines} line(s)`)
    if (count < anchor.lines) fail(`${anchor.lines - count} line(s) missing from the end${torn ? ', the last one cut' : ''}`)
    fail(`line ${from + anchor.lines} is not the anchor's head: rewritten`)
  }
}
console.log(`ok ${count} line(s)${unchecked ? ' (some keyed lines not checked: no key, or an earlier one)' : ''}`)
