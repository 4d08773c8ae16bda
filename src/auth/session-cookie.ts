// The session cookie, set by every sign-in (password, second factor, passkey, single sign-on) and
// cleared at sign-out: its own file, so the sign-in routes need not import each other.
import type { Cookie } from 'elysia'
import type { Config } from '../config'
import type { SignedIn } from './accounts'

export function setSessionCookie(cookie: Record<string, Cookie<unknown>>, config: Config, signedIn: SignedIn): void {
  cookie[config.sessionCookie].set({
    value: signedIn.token,
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: config.secureCookies,
    expires: signedIn.expiresAt,
  })
}

export function clearSessionCookie(cookie: Record<string, Cookie<unknown>>, config: Config): void {
  cookie[config.sessionCookie].set({ value: '', httpOnly: true, sameSite: 'lax', path: '/', secure: config.secureCookies, maxAge: 0, expires: new Date(0) })
}
