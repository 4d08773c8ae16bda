// Where the project's own files are, whether the server runs from src/ or from the dist/ bundle:
// the nearest folder above this module that holds package.json.
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'

function projectDir(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`)
  }
}

export const PROJECT_DIR = projectDir(import.meta.dir)
