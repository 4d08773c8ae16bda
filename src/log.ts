// The server's log: readable lines (SVC_LOG_FORMAT=text, the default) or one JSON object per line
// (json), with the time, the level and the message; a request adds its method, route template,
// status, duration and request id. Never a query string, a header, a body or a secret: lines are
// made from route templates and the services' own messages, which carry no request data.
import type { Logger } from './http/error-handler'

export type LogFormat = 'text' | 'json'

export interface RequestRecord {
  method: string
  /** The route template (/api/entries/:id), never the path asked for. */
  route: string
  status: number
  durationMs: number
  requestId: string
}

export interface ServerLog {
  /** A problem the services report ("error: …", "warning: …", "oidc: …"): standard error. */
  log: Logger
  /** Start, stop: standard output. */
  info(message: string): void
  /** Why the server could not start: standard error. */
  fatal(message: string): void
  /** One answered request: standard output, written once per turn of the event loop. */
  request(record: RequestRecord): void
  /** Writes the requests still waiting (before exiting). */
  flush(): void
}

export interface LogSinks {
  stdout(text: string): void
  stderr(text: string): void
}

const CONSOLE: LogSinks = { stdout: (text) => console.log(text), stderr: (text) => console.error(text) }

/** A service's line starts with its level when it is not a warning ("error: …", "warning: …", "info: …"). */
function split(line: string): { level: 'error' | 'warn' | 'info'; message: string } {
  const match = /^(error|warning|info): /.exec(line)
  if (!match) return { level: 'warn', message: line }
  return { level: match[1] === 'error' ? 'error' : match[1] === 'info' ? 'info' : 'warn', message: line.slice(match[0].length) }
}

export function createServerLog(format: LogFormat, sinks: LogSinks = CONSOLE, now: () => number = Date.now): ServerLog {
  const json = format === 'json'
  const time = () => new Date(now()).toISOString()
  let pending: string[] = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (pending.length === 0) return
    const lines = pending
    pending = []
    sinks.stdout(lines.join('\n'))
  }
  return {
    log(line) {
      flush()
      if (!json) return sinks.stderr(line)
      const { level, message } = split(line)
      sinks.stderr(JSON.stringify({ time: time(), level, message }))
    },
    fatal(message) {
      flush()
      sinks.stderr(json ? JSON.stringify({ time: time(), level: 'error', message }) : message)
    },
    info(message) {
      flush()
      sinks.stdout(json ? JSON.stringify({ time: time(), level: 'info', message }) : message)
    },
    request(record) {
      const duration = Math.round(record.durationMs * 1000) / 1000
      pending.push(
        json
          ? JSON.stringify({
              time: time(),
              level: 'info',
              message: 'request',
              method: record.method,
              route: record.route,
              status: record.status,
              duration,
              requestId: record.requestId,
            })
          : `${record.method} ${record.route} ${record.status} ${duration} ms (request ${record.requestId})`,
      )
      // Lines of one turn of the event loop go out in one write: a write per request would cost
      // a system call on every answer.
      if (!scheduled) {
        scheduled = true
        setImmediate(flush)
      }
    },
    flush,
  }
}
