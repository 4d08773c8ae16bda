// An audit log file read as any tool would read it: JSON Lines, one event per line, nothing else
// (a zero byte, say, fails the test).
import { existsSync, readFileSync } from 'node:fs'

export function auditFileText(path: string): string {
  if (!existsSync(path)) return ''
  const text = readFileSync(path, 'utf8')
  if (text.includes('\0')) throw new Error(`${path}: zero bytes in an audit log`)
  return text
}

export function auditFileLines(path: string): string[] {
  return auditFileText(path).split('\n').filter(Boolean)
}
