// /api/2fa: two-factor (TOTP) tokens. The secret goes in; only codes come out, by reveal.
import { Elysia, t } from 'elysia'
import { authGuard, type GuardDeps } from '../../auth/guard'
import { paginate, PAGE_HEADERS, PageQuery, setPageHeaders } from '../../http/pagination'
import { errorResponses, IdParams, NoContent, withResponseHeaders } from '../../http/schemas'
import type { Vaults } from '../vault-access'
import { ref } from '../audit/service'
import { CreateTwoFactorBody, TwoFactorCodeSchema, TwoFactorSchema, UpdateTwoFactorBody } from './model'
import { TwoFactorService } from './service'
import type { Config } from '../../config'
import { policyOf } from '../lifecycle/trash'
import { actorOf } from '../lifecycle/versions'

const ListTwoFactorQuery = t.Object({
  ...PageQuery,
  name: t.Optional(t.String({ maxLength: 200, description: 'Only the tokens of exactly this service' })),
  q: t.Optional(t.String({ maxLength: 200, description: 'Case-insensitive text in the service or account name' })),
})

export function twoFactorRoutes(deps: GuardDeps & { vaults: Vaults; now: () => number; config: Partial<Pick<Config, 'historyVersions' | 'trashMs'>> }) {
  const tokens = new TwoFactorService(deps.vaults, deps.now, policyOf(deps.config))
  return new Elysia({ prefix: '/api/2fa', tags: ['Two-factor tokens'] })
    .use(authGuard(deps))
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
        const token = await tokens.create(auth.userId, body, actorOf(auth))
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
    .put('/:id', async ({ auth, audit, params, body }) => {
      const token = await tokens.update(auth.userId, params.id, body, actorOf(auth))
      await audit('twofa.update', [ref('twofa', token, `${token.service} (${token.accountName})`)], { fields: Object.keys(body).sort() })
      return token
    }, {
      auth: '2fa:write',
      params: IdParams,
      body: UpdateTwoFactorBody,
      response: { 200: TwoFactorSchema, ...errorResponses(400, 404, 413) },
      detail: { operationId: 'updateTwoFactorToken', summary: 'Update a two-factor token; only the fields sent change', description: 'A new secret is validated and re-encrypted.' },
    })
    .delete(
      '/:id',
      async ({ auth, audit, params, set }) => {
        const token = await tokens.get(auth.userId, params.id)
        await tokens.remove(auth.userId, params.id, actorOf(auth))
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
        await audit('twofa.reveal', [ref('twofa', code, `${code.service} (${code.accountName})`)])
        return code
      },
      {
        auth: '2fa:reveal',
        params: IdParams,
        response: { 200: TwoFactorCodeSchema, ...errorResponses(404) },
        detail: {
          operationId: 'revealTwoFactorCode',
          summary: 'The current TOTP code of a token',
          description: 'RFC 6238 with the token\'s `algorithm`, `digits` and `period` (SHA-1, 6 digits, 30 seconds unless its otpauth URI said otherwise). Answers carry Cache-Control: no-store. 404 when the secret cannot be decrypted.',
        },
      },
    )
}
