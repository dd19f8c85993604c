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
