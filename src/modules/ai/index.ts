// Placeholder: filled in by its own issue.
import { Elysia } from 'elysia'
import type { AppDeps } from '../../deps'

export function aiRoutes(_deps: AppDeps) {
  return new Elysia({ name: 'aiRoutes' })
}
