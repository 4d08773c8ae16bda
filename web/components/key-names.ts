// How a person tells one key from another: the variable, the project and the environment, in
// rows, buttons' accessible names, confirms, toasts, dialogs, History, Trash and Activity. "blog"
// alone names a project, not the key; "OPENAI_API_KEY of blog (production)" names the key.
import type { Category, Entry } from '../api'

/** The variable a category stands for: its env var name (single), or its name (a group). */
export const variableOf = (category: Pick<Category, 'envVarName' | 'name'> | undefined): string => category?.envVarName || category?.name || 'key'

/** "OPENAI_API_KEY of my-blog (production)"; without an environment: "… of my-blog". */
export function keyLabel(variable: string, project: string, environment?: string | null): string {
  return `${variable} of ${project}${environment ? ` (${environment})` : ''}`
}

/** An entry named by its variable, project and environment. */
export const entryLabel = (entry: Pick<Entry, 'name' | 'environment'>, category: Pick<Category, 'envVarName' | 'name'> | undefined): string =>
  keyLabel(variableOf(category), entry.name, entry.environment)
