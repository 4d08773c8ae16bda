// The model, through the Anthropic SDK: one forced tool call per question, whose input schema is
// the answer's shape. It is given names only (entry, category, variable and field names,
// environments, the user's prompt), never a value. Every failure (no key, an error, a timeout, an
// answer without the tool call) comes back as null, and the caller falls back to the built-in
// classifier. What comes back is still untrusted: the service validates it against its own data.
// Type only: the SDK (megabytes resident) loads on the first model call, not at start-up.
import type Anthropic from '@anthropic-ai/sdk'
import type { AiConfig } from '../../config'
import type { Logger } from '../../http/error-handler'
import type { EntryMetadata } from './classifier'
import { lazy } from '../../http/lazy'

const loadSdk = lazy('The AI model client', () => import('@anthropic-ai/sdk'))

export const PICK_ENTRIES_TOOL = 'select_entries'
export const FILE_KEYS_TOOL = 'file_keys'

const MAX_TOKENS = 4096

const PICK_ENTRIES_SCHEMA = {
  type: 'object' as const,
  properties: {
    entryIds: {
      type: 'array',
      items: { type: 'string' },
      description: 'The ids of the entries the project needs, taken from the list given',
    },
  },
  required: ['entryIds'],
  additionalProperties: false,
}

const FILE_KEYS_SCHEMA = {
  type: 'object' as const,
  properties: {
    keys: {
      type: 'array',
      description: 'One item per key name given, each filed into a category',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'The key name, exactly as given' },
          categoryName: { type: 'string', description: 'Display name of the category, usually the service (e.g. "AWS", "OpenAI")' },
          keyType: {
            type: 'string',
            enum: ['simple', 'group'],
            description: '"group" when several keys of one service belong together (each becomes a field), else "simple"',
          },
          icon: { type: 'string', description: 'Simple Icons slug of the service (e.g. "stripe"), when there is one' },
        },
        required: ['name', 'categoryName', 'keyType'],
        additionalProperties: false,
      },
    },
  },
  required: ['keys'],
  additionalProperties: false,
}

const PICK_SYSTEM = [
  'You help a developer assemble the .env file of a project from their secrets vault.',
  'You get the project description and the list of vault entries (names only, never values).',
  'Call the select_entries tool with the ids of the entries the project needs: match services, project names and the environment (development, staging, production) the description mentions.',
  'Pick at most one entry per category when an environment is named. Use only ids from the list.',
].join(' ')

const FILE_SYSTEM = [
  'You file environment variable names into categories of a secrets vault.',
  'You get key names only, never values. Call the file_keys tool with one item per name.',
  'Keys of one service that belong together (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) share a "group" category named after the service ("AWS");',
  'a lone key is a "simple" category named after its service, or after the key itself when the service is unknown.',
  'Give the Simple Icons slug of known services (anthropic, stripe, github, supabase, resend, postgresql, redis, ...).',
].join(' ')

/** The questions the service asks the model. Each answers null when the model cannot be used. */
export interface ExtractionModel {
  readonly available: boolean
  /** The raw input of the select_entries tool call. */
  pickEntries(prompt: string, entries: EntryMetadata[]): Promise<unknown | null>
  /** The raw input of the file_keys tool call. */
  fileKeys(names: string[]): Promise<unknown | null>
}

/** No API key: the built-in classifier always answers. */
export const noModel: ExtractionModel = {
  available: false,
  pickEntries: async () => null,
  fileKeys: async () => null,
}

function describeFailure(error: unknown): string {
  if (error instanceof Error) {
    const status = (error as { status?: unknown }).status
    return typeof status === 'number' ? `${error.name} ${status}` : error.name
  }
  return 'unknown error'
}

export class AnthropicModel implements ExtractionModel {
  readonly available = true
  private client: Promise<Anthropic> | undefined

  constructor(
    private readonly config: AiConfig & { apiKey: string },
    private readonly log: Logger,
  ) {}

  private sdk(): Promise<Anthropic> {
    this.client ??= loadSdk().then(
      ({ default: Sdk }) =>
        new Sdk({
          apiKey: this.config.apiKey,
          authToken: null,
          baseURL: this.config.baseUrl ?? null,
          timeout: this.config.timeoutMs,
          // One attempt: a retry would stack another timeout on top of the first.
          maxRetries: 0,
        }),
      // Not kept: the next call tries to load the SDK again (meanwhile the built-in classifier answers).
      (error: unknown) => {
        this.client = undefined
        throw error
      },
    )
    return this.client
  }

  pickEntries(prompt: string, entries: EntryMetadata[]): Promise<unknown | null> {
    const list = entries.map((e) => ({
      id: e.id,
      entryName: e.name,
      category: e.category,
      ...(e.keyType === 'group' ? { fields: e.fields } : { envVarName: e.envVarName }),
      environment: e.environment,
    }))
    const content = `Project description:\n${prompt}\n\nVault entries (JSON):\n${JSON.stringify(list)}`
    return this.callTool(PICK_SYSTEM, content, {
      name: PICK_ENTRIES_TOOL,
      description: 'Select the vault entries the described project needs',
      input_schema: PICK_ENTRIES_SCHEMA,
    })
  }

  fileKeys(names: string[]): Promise<unknown | null> {
    const content = `Key names (JSON):\n${JSON.stringify(names)}`
    return this.callTool(FILE_SYSTEM, content, {
      name: FILE_KEYS_TOOL,
      description: 'File each key name into a category',
      input_schema: FILE_KEYS_SCHEMA,
    })
  }

  private async callTool(system: string, content: string, tool: Anthropic.Messages.Tool): Promise<unknown | null> {
    const controller = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => {
        controller.abort()
        resolve('timeout')
      }, this.config.timeoutMs)
    })
    try {
      const sdk = await this.sdk()
      const call = sdk.messages.create(
        {
          model: this.config.model,
          max_tokens: MAX_TOKENS,
          system,
          tools: [tool],
          tool_choice: { type: 'tool', name: tool.name },
          messages: [{ role: 'user', content }],
        },
        { signal: controller.signal },
      )
      // Settles the SDK's promise quietly if the deadline wins the race.
      call.catch(() => {})
      const answer = await Promise.race([call, deadline])
      if (answer === 'timeout') {
        this.log(`ai: the model did not answer within ${this.config.timeoutMs} ms; the built-in classifier answered`)
        return null
      }
      const blocks: unknown = (answer as { content?: unknown }).content
      const use = Array.isArray(blocks)
        ? blocks.find((b): b is { type: 'tool_use'; name: string; input: unknown } => b?.type === 'tool_use' && b?.name === tool.name)
        : undefined
      if (!use) {
        this.log(`ai: the model answered without calling ${tool.name}; the built-in classifier answered`)
        return null
      }
      return use.input ?? null
    } catch (error) {
      this.log(`ai: the model call failed (${describeFailure(error)}); the built-in classifier answered`)
      return null
    } finally {
      clearTimeout(timer)
    }
  }
}

export function createExtractionModel(config: AiConfig, log: Logger): ExtractionModel {
  return config.apiKey ? new AnthropicModel({ ...config, apiKey: config.apiKey }, log) : noModel
}
