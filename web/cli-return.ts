// A signed-out visit to /cli?code=… goes through /login and then /: a mark is kept for this tab
// (never the code), and the page comes back to /cli once signed in. Loaded with the first page,
// not with the /cli page (loaded on first visit), which a signed-out visit never reaches.
import { effect } from '@preact/signals'
import { currentUser } from './api'
import { currentPath, navigate } from './router'

export const CLI_RETURN_MARK = 'svc-cli-code'
export const cameFromCliLink = location.pathname === '/cli' && new URLSearchParams(location.search).has('code')
if (cameFromCliLink) sessionStorage.setItem(CLI_RETURN_MARK, '1')
effect(() => {
  if (currentUser.value && currentPath.value !== '/cli' && sessionStorage.getItem(CLI_RETURN_MARK)) navigate('/cli', true)
})
