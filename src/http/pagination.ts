// Optional pages over a list answer: `limit` (1-1000) and an opaque `cursor` from the previous
// page's `X-Next-Cursor` header (or its `Link: <…>; rel="next"`). Without either, the whole list
// is answered as before. A cursor names the last item of its page (id and creation time), so a
// page continues after that item even when items were added or removed since; when that item
// itself was deleted, the next page starts at the first item created at or after it (an item
// created in the same millisecond may then come twice, never one skipped).
import { t } from 'elysia'
import { validationError } from './errors'
import type { ResponseHeader } from './schemas'

export const MAX_PAGE = 1000
/** The page size when a cursor comes without a limit. */
export const DEFAULT_PAGE = 100

export const PageQuery = {
  limit: t.Optional(
    t.Integer({
      minimum: 1,
      maximum: MAX_PAGE,
      description: `Answer at most this many items (1-${MAX_PAGE}); the next page's cursor comes in X-Next-Cursor and Link`,
    }),
  ),
  cursor: t.Optional(
    t.String({ maxLength: 200, description: `From the previous page's X-Next-Cursor header (a cursor without limit pages by ${DEFAULT_PAGE})` }),
  ),
}

export const NEXT_CURSOR_HEADER = 'X-Next-Cursor'

export const PAGE_HEADERS: Record<string, ResponseHeader> = {
  [NEXT_CURSOR_HEADER]: { description: 'The cursor of the next page; absent on the last page and when the request named neither limit nor cursor' },
  Link: { description: 'The next page: `<url>; rel="next"` (RFC 8288); absent on the last page' },
}

interface Pageable {
  id: string
  createdAt: string
}

const encodeCursor = (item: Pageable) => Buffer.from(`${item.createdAt}|${item.id}`).toString('base64url')

function decodeCursor(cursor: string): Pageable {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : ''
  const match = /^([0-9T:.Z-]{1,40})\|([^|]{1,100})$/.exec(text)
  if (!match || !Number.isFinite(Date.parse(match[1]))) throw validationError('cursor', 'is not a cursor this list gave out')
  return { createdAt: match[1], id: match[2] }
}

export interface Page<T> {
  items: T[]
  /** Set when there is a next page. */
  nextCursor: string | null
}

/** The page of `items` the query asks for; the whole list when it names neither limit nor cursor. */
export function paginate<T extends Pageable>(items: T[], query: { limit?: number; cursor?: string }): Page<T> {
  if (query.limit === undefined && query.cursor === undefined) return { items, nextCursor: null }
  const limit = query.limit ?? DEFAULT_PAGE
  let start = 0
  if (query.cursor !== undefined) {
    const after = decodeCursor(query.cursor)
    const found = items.findIndex((item) => item.id === after.id)
    if (found >= 0) start = found + 1
    else {
      // Its item was deleted: from the first one created at or after it (lists are in creation order).
      const next = items.findIndex((item) => item.createdAt >= after.createdAt)
      start = next >= 0 ? next : items.length
    }
  }
  const page = items.slice(start, start + limit)
  const last = start + page.length - 1
  return { items: page, nextCursor: last + 1 < items.length && page.length > 0 ? encodeCursor(items[last]) : null }
}

/** Sets X-Next-Cursor and Link for a page with a next one (the same query, the next cursor). */
export function setPageHeaders(headers: Record<string, string | number>, request: Request, page: Page<unknown>): void {
  if (page.nextCursor === null) return
  const url = new URL(request.url)
  url.searchParams.set('cursor', page.nextCursor)
  headers['x-next-cursor'] = page.nextCursor
  headers['link'] = `<${url.pathname}${url.search}>; rel="next"`
}
