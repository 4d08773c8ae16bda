// Who spent the machine's CPU during a slice of load (`bun run bench --store postgres`): the
// server, PostgreSQL's processes, the kernel's own threads (page writeback, the disk's queue),
// and wrk, each per request; and how busy the machine was. On two cores shared by all of them,
// the ratio of all CPU per request between two servers bounds the ratio of their throughputs
// (hence of p50 at a fixed number of connections) when the machine is saturated: no scheduling
// of the waits can bring the second's below it (docs/scaling.md, "PostgreSQL, measured").
import { readdirSync, readFileSync } from 'node:fs'

type Group = 'server' | 'postgres' | 'kernel'

/** Each process's CPU in ms by group (by pid), and the machine's busy and total time, at one moment. */
export interface CpuSnapshot {
  processes: Record<Group, Map<string, number>>
  busy: number
  total: number
}

/** Per request in µs (wrk's own from its resource usage), and the machine's busy share. */
export interface CpuShare {
  server: number
  postgres: number
  kernel: number
  wrk: number
  all: number
  busyPercent: number
}

/** /proc's clock tick (USER_HZ, 100 on Linux), in ms. */
const CLOCK_TICK_MS = 10

/**
 * /proc/PID/stat: the command's name (between the parentheses; it may hold spaces) and the fields
 * after it. Throws once the process is gone.
 */
function readStat(pid: number | string): { name: string; fields: string[] } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const end = stat.lastIndexOf(')')
  return { name: stat.slice(stat.indexOf('(') + 1, end), fields: stat.slice(end + 2).split(' ') }
}

/** utime + stime of a process, all its threads (ended ones included), in ms. */
function processMs(fields: string[]): number {
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS
}

/** A live process's utime + stime in ms (bench/startup.ts); throws once it is gone. */
export function processCpuMs(pid: number): number {
  return processMs(readStat(pid).fields)
}

/**
 * The server's CPU (`serverPid`), every `postgres` process's (all clusters on the machine: the
 * bench's is the only busy one), the kernel's threads' (children of kthreadd, pid 2), and the
 * machine's busy and total time from /proc/stat.
 */
export function cpuSnapshot(serverPid: number): CpuSnapshot {
  const snapshot: CpuSnapshot = { processes: { server: new Map(), postgres: new Map(), kernel: new Map() }, busy: 0, total: 0 }
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    let stat: { name: string; fields: string[] }
    try {
      stat = readStat(pid)
    } catch {
      // Gone meanwhile (a backend that ended): its time is lost, as between two snapshots.
      continue
    }
    const { name, fields } = stat
    const group: Group | null = Number(pid) === serverPid ? 'server' : fields[1] === '2' ? 'kernel' : name === 'postgres' ? 'postgres' : null
    if (group) snapshot.processes[group].set(pid, processMs(fields))
  }
  // cpu  user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
  const times = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number)
  snapshot.total = times.reduce((sum, t) => sum + t, 0) * CLOCK_TICK_MS
  snapshot.busy = snapshot.total - (times[3] + times[4]) * CLOCK_TICK_MS
  return snapshot
}

/** Slices added up: the CPU between each slice's snapshots, the requests and wrk's CPU (ms). */
export class CpuTally {
  private spent = { server: 0, postgres: 0, kernel: 0, busy: 0, total: 0 }
  private requests = 0
  private wrkMs = 0

  /**
   * A process's time since `before` (from 0 if it started meanwhile); one that ended meanwhile
   * (a backend whose connection closed) counts nothing, rather than less than nothing.
   */
  add(before: CpuSnapshot, after: CpuSnapshot, requests: number, wrkMs: number): void {
    for (const group of Object.keys(after.processes) as Group[])
      for (const [pid, ms] of after.processes[group]) this.spent[group] += ms - (before.processes[group].get(pid) ?? 0)
    this.spent.busy += after.busy - before.busy
    this.spent.total += after.total - before.total
    this.requests += requests
    this.wrkMs += wrkMs
  }

  share(): CpuShare {
    const per = (ms: number) => (this.requests > 0 ? (ms * 1000) / this.requests : NaN)
    const { server, postgres, kernel } = this.spent
    return {
      server: per(server),
      postgres: per(postgres),
      kernel: per(kernel),
      wrk: per(this.wrkMs),
      all: per(server + postgres + kernel + this.wrkMs),
      busyPercent: this.spent.total > 0 ? (100 * this.spent.busy) / this.spent.total : NaN,
    }
  }
}
