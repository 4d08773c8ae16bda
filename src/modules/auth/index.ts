// /api/auth, all of it: each file holds one way in (password, single sign-on, the CLI's device
// login, the second step and passkeys, re-authentication). The rules they share (sessions,
// challenges, the failed-sign-in record) live in src/auth/.
import { Elysia } from 'elysia'
import type { AppDeps } from '../../deps'
import { deviceLoginRoutes } from './device-login'
import { loginRoutes } from './login'
import { oidcRoutes } from './oidc'
import { reauthRoutes } from './reauth'
import { secondFactorRoutes } from './second-factor'

export function authRoutes(deps: AppDeps) {
  return new Elysia({ name: 'authRoutes' })
    .use(loginRoutes(deps))
    .use(oidcRoutes(deps))
    .use(deviceLoginRoutes(deps))
    .use(secondFactorRoutes(deps))
    .use(reauthRoutes(deps))
}
