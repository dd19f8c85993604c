/**
 * Schema migration failed or cannot proceed: a migration recorded as applied differs from this
 * release's (checksum), the database was migrated by a newer release, or another process holds a
 * migration claim for too long. Not retryable without an operator.
 */
export class MigrationError extends Error {
  override readonly name = 'MigrationError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
