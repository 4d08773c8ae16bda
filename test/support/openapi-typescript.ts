// openapi-typescript, as a user would run it against a vault's document. It drives the
// TypeScript 5 compiler API (ts.factory), which the project's TypeScript 7 (a native compiler)
// does not offer: its modules get the `typescript5` dev dependency instead of `typescript`.
import { plugin } from 'bun'

let installed = false

function useTypeScript5(): void {
  if (installed) return
  installed = true
  const typescript5 = require.resolve('typescript5')
  plugin({
    name: 'openapi-typescript on TypeScript 5',
    setup(build) {
      build.onLoad({ filter: /[\\/]openapi-typescript[\\/]dist[\\/].*\.mjs$/ }, async ({ path }) => ({
        contents: (await Bun.file(path).text()).replace(/from\s*["']typescript["']/g, `from ${JSON.stringify(typescript5)}`),
        loader: 'js',
      }))
    },
  })
}

/** The TypeScript declarations openapi-typescript generates for this OpenAPI document. */
export async function generateTypes(document: object): Promise<string> {
  useTypeScript5()
  const { default: openapiTS, astToString } = await import('openapi-typescript')
  return astToString(await openapiTS(document as never))
}
