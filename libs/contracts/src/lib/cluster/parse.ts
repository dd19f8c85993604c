import { z } from 'zod';
import { decodeJson, InvalidMessageError } from './invalid-message';

export { InvalidMessageError };

/**
 * Decodes UTF-8 JSON and validates it against `schema`.
 *
 * @throws InvalidMessageError with reason `invalid-json` or the first schema problems (path: message).
 */
export function parseWith<S extends z.ZodType>(kind: string, schema: S, data: Uint8Array | string): z.infer<S> {
  const raw = decodeJson(kind, data);
  const res = schema.safeParse(raw);
  if (!res.success) {
    const problems = res.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
      .join('; ');
    throw new InvalidMessageError(kind, problems, { cause: res.error });
  }
  return res.data;
}

/** ISO-8601 timestamp with a zone (what `Date.prototype.toISOString` writes). */
export const isoTime = z.iso.datetime({ offset: true });
