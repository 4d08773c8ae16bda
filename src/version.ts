// The release, from package.json (bundled in at build time).
import { version } from '../package.json' with { type: 'json' }

export const VERSION: string = version
