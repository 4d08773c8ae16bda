// The vault's naming rules, each written once. The services and their twin checks, the trash,
// the AI import, the icon pack and the page all use these. No imports: the page bundles this
// file as it is, and nothing here may pull server code into it.

/** The longest name a category, an entry, a project or a variable may have. */
export const MAX_NAME_LENGTH = 200

/** A name as a person tells names apart (categories, env projects, 2FA services): trimmed, any case. */
export const nameKey = (name: string) => name.trim().toLowerCase()

/** Whether two names are the same for a person (see nameKey). */
export const sameName = (a: string, b: string) => nameKey(a) === nameKey(b)

/**
 * An environment variable name: a simple category's envVarName, a group's field names, the names
 * the export writes (a POSIX shell identifier too) and the import makes.
 */
export const VARIABLE_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$'
const VARIABLE_NAME = new RegExp(VARIABLE_NAME_PATTERN)
export const isVariableName = (name: string) => VARIABLE_NAME.test(name)

/**
 * A pasted key's name made a variable name: invalid characters become `_`, a leading digit gets
 * `_`; null when nothing (or only `_`) is left or it is longer than MAX_NAME_LENGTH.
 */
export function toVariableName(raw: string): string | null {
  const trimmed = raw.trim()
  if (!trimmed || trimmed.length > MAX_NAME_LENGTH) return null
  let name = trimmed.replace(/[^A-Za-z0-9_]/g, '_')
  if (/^[0-9]/.test(name)) name = `_${name}`
  if (/^_+$/.test(name) || name.length > MAX_NAME_LENGTH) return null
  return name
}

/** A Simple Icons slug, as a category's icon holds it and /icons/<slug>.svg serves it. */
export const ICON_SLUG_PATTERN = '^[a-z0-9-]{1,64}$'
const ICON_SLUG = new RegExp(ICON_SLUG_PATTERN)
export const isIconSlug = (slug: string) => ICON_SLUG.test(slug)
