// No zod here: the defender's heartbeat thread loads this module (ADR 0014).

/** A message or stored record that does not match its schema; `reason` is short and loggable. */
export class InvalidMessageError extends Error {
  override readonly name = 'InvalidMessageError';

  constructor(
    readonly kind: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`invalid ${kind}: ${reason}`, options);
  }
}

/**
 * Decodes UTF-8 JSON of a `kind` record.
 *
 * @throws InvalidMessageError with reason `invalid-json`.
 */
export function decodeJson(kind: string, data: Uint8Array | string): unknown {
  try {
    return JSON.parse(typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  } catch (err) {
    throw new InvalidMessageError(kind, 'invalid-json', { cause: err });
  }
}
