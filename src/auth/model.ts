import { t } from 'elysia'
import { component, strictObject, Timestamp } from '../http/schemas'
import { ScopeSchema } from './scopes-schema'

export const EMAIL_PATTERN = '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$'

export const UserSchema = component(
  'User',
  t.Object({
    id: t.String(),
    email: t.String(),
    name: t.Union([t.String(), t.Null()]),
    createdAt: Timestamp,
  }),
)

export const Email = t.String({ minLength: 3, maxLength: 200, pattern: EMAIL_PATTERN, error: 'must be a valid e-mail address (at most 200 characters)' })

export const RegisterBody = component(
  'RegisterBody',
  strictObject({
    email: Email,
    password: t.String({ minLength: 8, maxLength: 1024, error: 'must be 8 to 1024 characters' }),
    name: t.Optional(t.String({ maxLength: 200 })),
    invite: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 200,
        description: 'An invite link’s token: the account is made even when sign-up is closed, and joins that shared vault',
      }),
    ),
  }),
)

export const LoginBody = component(
  'LoginBody',
  strictObject({
    email: t.String({ maxLength: 1024 }),
    password: t.String({ maxLength: 1024 }),
  }),
)

export const UserAnswer = component('SignedIn', t.Object({ user: UserSchema }, { description: 'Signed in: the session cookie is set' }))

/** Login: signed in, or (two-factor sign-in on) the second step is needed. */
export const LoginAnswer = component(
  'LoginResult',
  t.Union([
    UserAnswer,
    t.Object({ twoFactorRequired: t.Literal(true, { description: 'Send a second factor to POST /api/auth/login/2fa (or sign in with a passkey)' }) }),
  ]),
)

export const MeAnswer = component(
  'Me',
  t.Object({
    user: t.Object({
      ...UserSchema.properties,
      twoFactorEnabled: t.Boolean({ description: 'Whether sign-in asks for a second factor' }),
      recoveryCodesLeft: t.Optional(t.Integer({ minimum: 0, description: 'Unused recovery codes (present while two-factor sign-in is on)' })),
    }),
    auth: t.Union([t.Literal('session'), t.Literal('access-key')]),
    scopes: t.Optional(t.Array(ScopeSchema, { description: "The access key's scopes (absent for a session)" })),
  }),
)

export const ProvidersAnswer = component(
  'SignInMethods',
  t.Object({
    password: t.Boolean(),
    signup: t.Union([t.Literal('open'), t.Literal('closed')]),
    oidc: t.Object({ enabled: t.Boolean(), name: t.Union([t.String(), t.Null()]) }),
    // For the first-run page: the policy as configured, and whether no account exists yet.
    signupPolicy: t.Union([t.Literal('first'), t.Literal('open'), t.Literal('closed')], { description: 'SVC_SIGNUP as configured' }),
    firstAccount: t.Boolean({ description: 'No account exists yet: the next sign-up creates the first one' }),
  }),
)
