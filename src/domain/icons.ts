// The brand icons the vault has: one list of simple-icons slugs (icon-slugs.json, written by
// scripts/icon-slugs.ts). The icon pack holds exactly these (web/build.ts), so the page sees them
// in /icons/slugs.json, and the AI import keeps a model's icon only when it is one of them.
let slugs: Promise<ReadonlySet<string>> | undefined

/** The known slugs, read on first use (the AI import): not at start, for idle memory. */
export function iconSlugs(): Promise<ReadonlySet<string>> {
  slugs ??= import('./icon-slugs.json').then((list) => new Set<string>(list.default))
  return slugs
}
