// A small history router: the path is a signal; links and navigate() push state.
import { signal } from '@preact/signals'

export const currentPath = signal(location.pathname)

/** Programmatic navigation (after a save, a sign-in): goes at once. */
export function navigate(path: string, replace = false): void {
  if (path === location.pathname) return
  if (replace) history.replaceState(null, '', path)
  else history.pushState(null, '', path)
  currentPath.value = path
  window.scrollTo(0, 0)
}

/**
 * Asked before a navigation the person started (a link, Back) while typed text is unsaved;
 * resolves true to go on. Set by the page's shell; without it, navigation always goes on.
 */
let leaveCheck: (() => Promise<boolean>) | null = null
export function setLeaveCheck(check: (() => Promise<boolean>) | null): void {
  leaveCheck = check
}

/** Navigation the person asked for: asks first when leaving would discard unsaved text. */
export async function navigateGuarded(path: string): Promise<void> {
  if (path === location.pathname) return
  if (leaveCheck && !(await leaveCheck())) return
  navigate(path)
}

addEventListener('popstate', () => {
  const target = location.pathname
  const from = currentPath.value
  if (!leaveCheck || target === from) {
    currentPath.value = target
    return
  }
  // Stay on the page (the address bar too) until the person has answered.
  history.pushState(null, '', from)
  void leaveCheck().then((go) => go && navigate(target))
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
