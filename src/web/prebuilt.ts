// The web interface as `bun run build` embeds it. scripts/build.ts replaces this module with one
// that imports the built files (copied beside dist/index.js, or inside the dist/svc-vault
// executable). Run from the sources there is none, and bundle.ts builds it on first use.
export interface PrebuiltWeb {
  html: string
  /** Absolute paths of the built files (in the executable: /$bunfs/...). */
  files: { path: string; type: string; file: string; br: string; gzip: string }[]
  icons: string
  /** The API reference's script (the pinned @scalar/api-reference standalone build), gzipped. */
  docsScript: string
  /** The svc command bundled for Node (served at /cli/svc). */
  cli?: string
}

export const prebuiltWeb: PrebuiltWeb | undefined = undefined
