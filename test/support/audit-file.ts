// An audit log file read as a person would read it: its lines, up to the reserve of zero bytes a
// running server keeps at its end (docs/audit.md). Zero bytes anywhere else fail the test.
import { existsSync, readFileSync } from 'node:fs'

export function auditFileText(path: string): string {
  if (!existsSync(path)) return ''
  const raw = readFileSync(path, 'utf8')
  const text = raw.replace(/\0+$/, '')
  if (text.includes('\0')) throw new Error(`${path}: zero bytes before the end of its lines`)
  return text
}

export function auditFileLines(path: string): string[] {
  return auditFileText(path).split('\n').filter(Boolean)
}
