// Loaded before Scalar on /api/docs. The page runs in a CSP sandbox without same-origin (it must
// not act with the vault's session), where reading localStorage or sessionStorage throws; Scalar
// reads them at start. Each gets an in-memory stand-in that lasts as long as the page.
// Kept as text here (not a file beside it), so that the bundle in dist/ serves it too.
export const DOCS_SANDBOX_SHIM = `;(() => {
  const memoryStorage = () => {
    const items = new Map()
    return {
      get length() {
        return items.size
      },
      key: (index) => [...items.keys()][index] ?? null,
      getItem: (key) => (items.has(String(key)) ? items.get(String(key)) : null),
      setItem: (key, value) => void items.set(String(key), String(value)),
      removeItem: (key) => void items.delete(String(key)),
      clear: () => items.clear(),
    }
  }
  for (const name of ['localStorage', 'sessionStorage']) {
    try {
      void window[name]
    } catch {
      Object.defineProperty(window, name, { value: memoryStorage(), configurable: true })
    }
  }
})()
`
