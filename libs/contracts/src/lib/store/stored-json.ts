import { CorruptRecordError, UnknownSchemaVersionError, type RecordContext, type RecordIssue } from './errors';

/**
 * The parsed JSON text of a stored record of schema `expected`.
 * @throws UnknownSchemaVersionError for another schema version.
 * @throws CorruptRecordError when `body` is not JSON.
 */
export function parseStoredJson(schemaVersion: unknown, expected: number, body: string, context: RecordContext, what: string): unknown {
  if (schemaVersion !== expected) throw new UnknownSchemaVersionError(context, schemaVersion, [expected]);
  try {
    return JSON.parse(body) as unknown;
  } catch (err) {
    throw new CorruptRecordError('malformed', context, `${what} is not JSON`, { cause: err });
  }
}

/** `value` as a `T` when `issues` is empty. @throws CorruptRecordError naming every issue. */
export function checkedStoredRecord<T>(value: unknown, issues: readonly RecordIssue[], context: RecordContext): T {
  if (issues.length > 0) throw new CorruptRecordError('invalid-value', context, issues.map((i) => `${i.path}: ${i.message}`).join('; '));
  return value as T;
}
