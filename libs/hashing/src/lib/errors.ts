/**
 * Thrown when a hash ring or rendezvous hasher is configured with values outside their documented
 * range (virtual-node count, node weight, duplicate node ids, a 64-bit value out of range).
 */
export class InvalidHashConfigError extends Error {
  override readonly name = 'InvalidHashConfigError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Thrown when a key is looked up on a ring or rendezvous hasher that has no nodes. */
export class EmptyRingError extends Error {
  override readonly name = 'EmptyRingError';

  constructor(message = 'no nodes: cannot choose an owner', options?: { cause?: unknown }) {
    super(message, options);
  }
}
