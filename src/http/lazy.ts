// Libraries that only some routes need (passkeys, OIDC, the AI SDK, 2FA import and export) load on
// their first use, not at start (docs/performance.md, "Start-up"). A load that fails (a chunk gone
// from beside dist/index.js, a broken install) fails only the request that needed it, with a 500
// naming the feature (error-handler.ts logs the cause); the next use tries again.

export class LazyLoadError extends Error {
  constructor(
    /** What could not be loaded, as the answer names it ("Passkeys"). */
    readonly feature: string,
    cause: unknown,
  ) {
    super(`${feature}: could not be loaded: ${(cause as Error)?.message ?? String(cause)}`, { cause })
    this.name = 'LazyLoadError'
  }
}

/** `load` run once on first call and kept; a failure is not kept (LazyLoadError, tried again next call). */
export function lazy<T>(feature: string, load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined
      throw new LazyLoadError(feature, error)
    })
    return loading
  }
}
