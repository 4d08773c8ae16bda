import { t } from 'elysia'
import { strictObject, Timestamp } from '../http/schemas'

export const EMAIL_PATTERN = '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$'

export const UserSchema = t.Object({
  id: t.String(),
  email: t.String(),
  name: t.Union([t.String(), t.Null()]),
  createdAt: Timestamp,
})

export const Email = t.String({ minLength: 3, maxLength: 200, pattern: EMAIL_PATTERN, error: 'must be a valid e-mail address (at most 200 characters)' })

export const RegisterBody = strictObject({
  email: Email,
  password: t.String({ minLength: 8, maxLength: 1024, error: 'must be 8 to 1024 characters' }),
  name: t.Optional(t.String({ maxLength: 200 })),
})

export const LoginBody = strictObject({
  email: t.String({ maxLength: 1024 }),
  password: t.String({ maxLength: 1024 }),
})

export const UserAnswer = t.Object({ user: UserSchema })

/** Login: signed in, or (two-factor sign-in on) the second step is needed. */
export const LoginAnswer = t.Union([
  UserAnswer,
  t.Object({ twoFactorRequired: t.Literal(true, { description: 'Send a second factor to POST /api/auth/login/2fa (or sign in with a passkey)' }) }),
])

export const MeAnswer = t.Object({
  user: t.Object({ ...UserSchema.properties, twoFactorEnabled: t.Boolean({ description: 'Whether sign-in asks for a second factor' }) }),
  auth: t.Union([t.Literal('session'), t.Literal('access-key')]),
  scopes: t.Optional(t.Array(t.String())),
})

export const ProvidersAnswer = t.Object({
  password: t.Boolean(),
  signup: t.Union([t.Literal('open'), t.Literal('closed')]),
  oidc: t.Object({ enabled: t.Boolean(), name: t.Union([t.String(), t.Null()]) }),
})
