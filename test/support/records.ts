// Records a test needs, made through the API; set-up that fails stops the test with the answer.
import type { Client } from './client'

/** A new category of `client`'s; its body as the API answered. */
export async function createCategory(client: Client, body: Record<string, unknown>) {
  const answer = await client.post('/api/categories', body)
  if (answer.status !== 201) throw new Error(`category not created: ${answer.text}`)
  return answer.body
}

/** A new entry of `client`'s; its body as the API answered. */
export async function createEntry(client: Client, body: Record<string, unknown>) {
  const answer = await client.post('/api/entries', body)
  if (answer.status !== 201) throw new Error(`entry not created: ${answer.text}`)
  return answer.body
}
