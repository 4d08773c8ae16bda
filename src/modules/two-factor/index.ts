// /api/2fa: two-factor (TOTP) tokens. The secret goes in; only codes come out, by reveal.
import { Elysia, t } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { routePrefix } from '../../auth/vault-mount'
import { paginate, PAGE_HEADERS, PageQuery, setPageHeaders } from '../../http/pagination'
import { errorResponses, IdParams, NoContent, withResponseHeaders } from '../../http/schemas'
import type { AppDeps } from '../../deps'
import { ref } from '../audit/service'
import {
  CreateTwoFactorBody,
  ExportTwoFactorBody,
  ImportTwoFactorBody,
  TwoFactorCodeSchema,
  TwoFactorExportAnswer,
  TwoFactorImportAnswer,
  TwoFactorSchema,
  UpdateTwoFactorBody,
} from './model'
import { TwoFactorService, TwoFactorTransfer } from './service'
import { AppError } from '../../http/errors'
import { bodyIsAFile } from '../../http/body'
import { clientAddress } from '../../http/client-address'
import type { Config } from '../../config'
import { policyOf } from '../lifecycle/trash'
import { versionAuthor } from '../lifecycle/versions'

const ListTwoFactorQuery = t.Object({
  ...PageQuery,
  name: t.Optional(t.String({ maxLength: 200, description: 'Only the tokens of exactly this service' })),
  q: t.Optional(t.String({ maxLength: 200, description: 'Case-insensitive text in the service or account name' })),
})

const IMPORT_PATH = '/api/2fa/import'
// An oversized import is a file too large (400), not a request too large (413).
bodyIsAFile(IMPORT_PATH)

export function twoFactorRoutes(
  deps: GuardDeps &
    Pick<AppDeps, 'accounts' | 'vaults' | 'keyring' | 'now' | 'protection'> & { config: Partial<Pick<Config, 'historyVersions' | 'trashMs' | 'trustProxy'>> },
) {
  const { freshProof } = deps.protection
  const tokens = new TwoFactorService(deps.vaults, deps.now, policyOf(deps.config))
  const transfer = new TwoFactorTransfer(deps.vaults, deps.now)
  return new Elysia({ prefix: routePrefix(deps, '/api/2fa'), tags: ['Two-factor tokens'] })
    .use(authGuard(deps))
    .post(
      '/import',
      async ({ auth, audit, body }) => {
        const answer = await transfer.importTokens(auth.userId, body, versionAuthor(auth))
        if (answer.applied) {
          await audit(
            'twofa.import',
            answer.created.map((item) => ref('twofa', { id: item.id! }, `${item.service} (${item.accountName})`)),
            { format: answer.format, created: answer.created.length, duplicates: answer.duplicates.length, refused: answer.refused.length },
          )
        }
        return answer
      },
      {
        auth: '2fa:write',
        body: ImportTwoFactorBody,
        response: { 200: TwoFactorImportAnswer, ...errorResponses(400, 413) },
        detail: {
          operationId: 'importTwoFactorTokens',
          summary: "Import two-factor tokens from another authenticator app's export",
          description:
            'Without `apply`, a preview: which tokens would be created, which are duplicates (the same secret, service and account is already stored) and which are refused (with why); nothing is written. With `apply: true`, the created ones are stored in one durable change and audited as one `twofa.import`. A file that cannot be read at all is 400 with the reason: IMPORT_UNREADABLE (not a supported format, truncated or damaged, nested too deeply), IMPORT_PASSWORD_REQUIRED / IMPORT_WRONG_PASSWORD (encrypted Aegis), IMPORT_TOO_LARGE (over 2 MiB or 1000 tokens); nothing is written then.',
        },
      },
    )
    .post(
      '/export',
      async ({ auth, audit, body, request, server, set, recheck }) => {
        // The password again: whoever finds a session open must not walk off with every secret.
        // Also a fresh proof: in a session older than 10 minutes the second factor too.
        if (auth.user.passwordHash !== null && body.password === undefined) throw new AppError(401, 'INVALID_CREDENTIALS', 'The password is required')
        const client = clientAddress(request, server, { trustProxy: deps.config.trustProxy ?? null })
        await freshProof.requireOrProve(
          auth,
          auth.user.passwordHash === null ? undefined : { password: body.password, code: body.code, recoveryCode: body.recoveryCode },
          client,
        )
        const answer = await transfer.exportTokens(auth.userId, body.format)
        set.headers['cache-control'] = 'no-store'
        // On disk before the secrets leave.
        await audit('twofa.export', [], { format: answer.format, count: answer.count })
        // Session only, so the guard's own re-check does not run: a key revoked or a member
        // removed meanwhile gets no secret.
        recheck()
        return answer
      },
      {
        auth: 'session',
        body: ExportTwoFactorBody,
        response: { 200: TwoFactorExportAnswer, ...errorResponses(400, 401, 403, 429) },
        detail: {
          operationId: 'exportTwoFactorTokens',
          summary: 'Export every two-factor token, secrets included',
          description:
            'Session only (an access key is 403 SESSION_REQUIRED), with the account password entered again (401 INVALID_CREDENTIALS when wrong, throttled like sign-in; an account without a password needs a single sign-on sign-in within 10 minutes, else 403 REAUTHENTICATION_REQUIRED). Audited as `twofa.export`. Formats: `otpauth` (links, one per line), `aegis` (an Aegis plain vault), `google-migration` (Google Authenticator export links, 10 tokens per QR code; Steam, 7-digit and non-30-second tokens are listed in `skipped`). Answers carry Cache-Control: no-store.',
        },
      },
    )
    .get(
      '/',
      async ({ auth, query, set, request }) => {
        const page = paginate(await tokens.find(auth.userId, query), query)
        setPageHeaders(set.headers, request, page)
        return page.items
      },
      {
        auth: '2fa:read',
        query: ListTwoFactorQuery,
        response: { 200: withResponseHeaders(t.Array(TwoFactorSchema), PAGE_HEADERS), ...errorResponses(400) },
        detail: {
          operationId: 'listTwoFactorTokens',
          summary: 'List your two-factor tokens (never their secrets)',
          description:
            'In creation order. Without `limit` and `cursor`, every token (that the filters let through). With `limit` (1-1000), one page; when more follow, `X-Next-Cursor` holds the cursor of the next page and `Link` its URL (rel="next").',
        },
      },
    )
    .post(
      '/',
      async ({ auth, audit, body, set }) => {
        const token = await tokens.create(auth.userId, body, versionAuthor(auth))
        await audit('twofa.create', [ref('twofa', token, `${token.service} (${token.accountName})`)])
        set.status = 201
        return token
      },
      {
        auth: '2fa:write',
        body: CreateTwoFactorBody,
        response: { 201: TwoFactorSchema, ...errorResponses(400, 413) },
        detail: { operationId: 'createTwoFactorToken', summary: 'Add a two-factor token', description: 'An unusable secret is 400 INVALID_TOTP_SECRET.' },
      },
    )
    .get('/:id', ({ auth, params }) => tokens.get(auth.userId, params.id), {
      auth: '2fa:read',
      params: IdParams,
      response: { 200: TwoFactorSchema, ...errorResponses(404) },
      detail: { operationId: 'getTwoFactorToken', summary: 'Get a two-factor token (never its secret)' },
    })
    .put(
      '/:id',
      async ({ auth, audit, params, body }) => {
        const token = await tokens.update(auth.userId, params.id, body, versionAuthor(auth))
        await audit('twofa.update', [ref('twofa', token, `${token.service} (${token.accountName})`)], { fields: Object.keys(body).sort() })
        return token
      },
      {
        auth: '2fa:write',
        params: IdParams,
        body: UpdateTwoFactorBody,
        response: { 200: TwoFactorSchema, ...errorResponses(400, 404, 413) },
        detail: {
          operationId: 'updateTwoFactorToken',
          summary: 'Update a two-factor token; only the fields sent change',
          description: 'A new secret is validated and re-encrypted.',
        },
      },
    )
    .delete(
      '/:id',
      async ({ auth, audit, params, set }) => {
        const token = await tokens.get(auth.userId, params.id)
        await tokens.remove(auth.userId, params.id, versionAuthor(auth))
        await audit('twofa.delete', [ref('twofa', token, `${token.service} (${token.accountName})`)])
        set.status = 204
      },
      {
        auth: '2fa:write',
        params: IdParams,
        response: { 204: NoContent, ...errorResponses(404) },
        detail: { operationId: 'deleteTwoFactorToken', summary: 'Delete a two-factor token (it goes to the trash)' },
      },
    )
    .post(
      '/:id/reveal',
      async ({ auth, audit, params, set }) => {
        set.headers['cache-control'] = 'no-store'
        const code = await tokens.reveal(auth.userId, params.id)
        // Recorded on disk before the code leaves; if it cannot be, the answer is 500.
        await audit(
          'twofa.reveal',
          [ref('twofa', code, `${code.service} (${code.accountName})`)],
          code.counter === undefined ? undefined : { counter: code.counter },
        )
        return code
      },
      {
        auth: '2fa:reveal',
        params: IdParams,
        response: { 200: TwoFactorCodeSchema, ...errorResponses(404) },
        detail: {
          operationId: 'revealTwoFactorCode',
          summary: 'The current code of a token',
          description:
            "TOTP: RFC 6238 with the token's `algorithm`, `digits` and `period` (SHA-1, 6 digits, 30 seconds unless its otpauth URI said otherwise). HOTP: the code of the token's counter (answered as `counter`), which each reveal advances durably before answering, so no code is shown twice. Steam Guard: 5 characters of 23456789BCDFGHJKMNPQRTVWXY. Answers carry Cache-Control: no-store. 404 when the secret cannot be decrypted.",
        },
      },
    )
}
