// The export's formats, one per reader (docs/export.md), as the pages offer them.
export type ExportFormat = 'dotenv' | 'bun' | 'node' | 'python' | 'docker' | 'systemd' | 'shell' | 'json' | 'yaml'

export const EXPORT_FORMATS: { value: ExportFormat; label: string; extension: string }[] = [
  { value: 'dotenv', label: 'dotenv — npm dotenv, dotenvx', extension: '.env' },
  { value: 'bun', label: 'Bun — bun run, bun --env-file', extension: '.env' },
  { value: 'node', label: 'Node — node --env-file', extension: '.env' },
  { value: 'python', label: 'Python — python-dotenv', extension: '.env' },
  { value: 'docker', label: 'Docker — docker run --env-file', extension: '.env' },
  { value: 'systemd', label: 'systemd — a unit’s env file', extension: '.env' },
  { value: 'shell', label: 'Shell — . ./file in sh or bash', extension: '.sh' },
  { value: 'json', label: 'JSON — name to value', extension: '.json' },
  { value: 'yaml', label: 'YAML — Kubernetes Secret', extension: '.yaml' },
]

export const formatExtension = (format: ExportFormat) => EXPORT_FORMATS.find((item) => item.value === format)?.extension ?? '.env'

/** The export's query for this selection and format (dotenv, the default, is asked for without one). */
export function exportQuery(selection: { environment?: string; name?: string; format: ExportFormat }): string {
  const query = new URLSearchParams()
  if (selection.environment) query.set('environment', selection.environment)
  if (selection.name) query.set('name', selection.name)
  if (selection.format !== 'dotenv') query.set('format', selection.format)
  return query.toString()
}
