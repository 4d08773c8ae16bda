// A small history router: the path is a signal; links and navigate() push state.
import { signal } from '@preact/signals'

export const currentPath = signal(location.pathname)

export function navigate(path: string, replace = false): void {
  if (path === location.pathname) return
  if (replace) history.replaceState(null, '', path)
  else history.pushState(null, '', path)
  currentPath.value = path
  window.scrollTo(0, 0)
}

addEventListener('popstate', () => {
  currentPath.value = location.pathname
})

/** Matches "/envs/:id" against a path; returns the parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/')
  const got = path.replace(/\/+$/, '').split('/')
  if (path === '/') got.splice(1, 1, '')
  if (want.length !== got.length) return null
  const params: Record<string, string> = {}
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(':')) params[want[i].slice(1)] = decodeURIComponent(got[i])
    else if (want[i] !== got[i]) return null
  }
  return params
}
