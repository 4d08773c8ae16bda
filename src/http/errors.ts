// The one error type: an HTTP status and a machine-readable code (docs/api.md, "Errors").
export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'INVALID_JSON'
  | 'INVALID_VALUE'
  | 'INVALID_TOTP_SECRET'
  | 'CATEGORY_SIMPLE_REQUIRES_ENV_VAR'
  | 'OIDC_FAILED'
  | 'AUTH_REQUIRED'
  | 'AUTH_INVALID_KEY'
  | 'INVALID_CREDENTIALS'
  | 'AUTH_SCOPE_REQUIRED'
  | 'SESSION_REQUIRED'
  | 'CSRF_REJECTED'
  | 'SIGNUP_DISABLED'
  | 'NOT_FOUND'
  | 'ENV_PROJECT_NOT_FOUND'
  | 'ENV_FILE_NOT_FOUND'
  | 'CATEGORY_NOT_FOUND'
  | 'ENTRY_NOT_FOUND'
  | 'TWO_FACTOR_NOT_FOUND'
  | 'ACCESS_KEY_NOT_FOUND'
  | 'OIDC_DISABLED'
  | 'EMAIL_TAKEN'
  | 'CATEGORY_NOT_EMPTY'
  | 'PAYLOAD_TOO_LARGE'
  | 'TOO_MANY_ATTEMPTS'
  | 'AI_EXTRACTION_FAILED'
  | 'AI_UNAVAILABLE'
  | 'INTERNAL_ERROR'
  // The PostgreSQL store's database is away (503).
  | 'STORE_UNAVAILABLE'
  | 'LAST_SIGN_IN_METHOD'
  | 'MISDIRECTED_REQUEST'
  | 'INVALID_HOST'
  // Device login (svc login), RFC 8628's token errors upper-cased.
  | 'AUTHORIZATION_PENDING'
  | 'SLOW_DOWN'
  | 'EXPIRED_TOKEN'
  | 'ACCESS_DENIED'
  | 'INVALID_GRANT'
  | 'DEVICE_CODE_NOT_FOUND'
  | 'ACCESS_KEY_REQUIRED'
  // Ambiguous per-environment exports and duplicates.
  | 'AMBIGUOUS_EXPORT'
  // An export format that cannot carry some value exactly.
  | 'EXPORT_FORMAT_REFUSED'
  | 'CATEGORY_EXISTS'
  | 'ENTRY_EXISTS'
  | 'ENV_PROJECT_EXISTS'
  // A request body not received within SVC_BODY_TIMEOUT (408).
  | 'REQUEST_TIMEOUT'
  // Account protection: two-factor sign-in, passkeys, sessions
  | 'TWO_FACTOR_REQUIRED'
  | 'INVALID_TWO_FACTOR_CODE'
  | 'TWO_FACTOR_NOT_ENABLED'
  | 'TWO_FACTOR_ALREADY_ENABLED'
  | 'TWO_FACTOR_SETUP_REQUIRED'
  | 'PASSKEY_FAILED'
  | 'PASSKEY_NOT_FOUND'
  | 'SESSION_NOT_FOUND'
  | 'REAUTHENTICATION_REQUIRED'
  // History, trash, notifications.
  | 'VERSION_NOT_FOUND'
  | 'TRASH_ITEM_NOT_FOUND'
  | 'ENV_FILE_EXISTS'
  | 'TRASH_PARENT_MISSING'
  | 'INVALID_WEBHOOK_URL'
  // Two-factor imports.
  | 'IMPORT_UNREADABLE'
  | 'IMPORT_TOO_LARGE'
  | 'IMPORT_PASSWORD_REQUIRED'
  | 'IMPORT_WRONG_PASSWORD'
  // Shared vaults: a member without the role an operation needs; the last admin staying.
  | 'ROLE_REQUIRED'
  | 'LAST_ADMIN'
  | 'NOT_ROTATED'
  | 'ROTATION_ITEM_NOT_FOUND'
  | 'MEMBER_NOT_FOUND'
  | 'VAULT_NAME_AMBIGUOUS'
  | 'KEY_BOUND_TO_VAULT'
  // Invites: an unknown, expired, used, revoked or declined one (one answer); joining a vault twice.
  | 'INVITE_NOT_FOUND'
  | 'ALREADY_MEMBER'
  // Moving a project between vaults.
  | 'PROJECT_NOT_FOUND'
  | 'MOVE_CONFLICT'

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers, such as Retry-After. */
    readonly headers?: Record<string, string>,
    /** Extra machine-readable members of the error body, beside `error` and `code` (never a secret). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message)
    this.name = 'AppError'
  }
}

export const badRequest = (code: ErrorCode, message: string) => new AppError(400, code, message)
export const validationError = (field: string, problem: string) => new AppError(400, 'VALIDATION_ERROR', `${field}: ${problem}`)
export const notFound = (code: ErrorCode, message: string) => new AppError(404, code, message)
export const conflict = (code: ErrorCode, message: string) => new AppError(409, code, message)

/** The not-found answers of the resources; a foreign id gets exactly the same one. */
export const NotFound = {
  envProject: () => notFound('ENV_PROJECT_NOT_FOUND', 'Env project not found'),
  envFile: () => notFound('ENV_FILE_NOT_FOUND', 'Env file not found'),
  category: () => notFound('CATEGORY_NOT_FOUND', 'Category not found'),
  entry: () => notFound('ENTRY_NOT_FOUND', 'Entry not found'),
  twoFactor: () => notFound('TWO_FACTOR_NOT_FOUND', 'Two-factor token not found'),
  accessKey: () => notFound('ACCESS_KEY_NOT_FOUND', 'Access key not found'),
  version: () => notFound('VERSION_NOT_FOUND', 'Version not found'),
  trashItem: () => notFound('TRASH_ITEM_NOT_FOUND', 'Trash item not found'),
  vault: () => notFound('NOT_FOUND', 'Vault not found'),
  member: () => notFound('MEMBER_NOT_FOUND', 'Member not found'),
  invite: () => notFound('INVITE_NOT_FOUND', 'Invite not found: it is unknown, expired, already used, declined or revoked'),
  rotationItem: () => notFound('ROTATION_ITEM_NOT_FOUND', 'That secret is not on the rotation list'),
} as const
