// The part of autocannon's API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  interface AutocannonRequest {
    method?: string
    path?: string
    body?: string
    headers?: Record<string, string>
  }
  interface AutocannonOptions {
    url: string
    connections?: number
    duration?: number
    amount?: number
    timeout?: number
    pipelining?: number
    /** Milliseconds between samples; the run ends at a sample tick. */
    sampleInt?: number
    headers?: Record<string, string>
    requests?: AutocannonRequest[]
    /** Replace `[<id>]` in request bodies with a fresh id on every request. */
    idReplacement?: boolean
  }
  interface AutocannonResult {
    duration: number
    errors: number
    timeouts: number
    non2xx: number
    '2xx': number
    requests: { total: number; average: number }
    latency: { p50: number; p99: number }
  }
  interface Tracker {
    on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void
    on(event: string, listener: (...args: any[]) => void): void
    stop(): void
  }
  function autocannon(options: AutocannonOptions, callback: (error: Error | null, result: AutocannonResult) => void): Tracker
  export default autocannon
}
