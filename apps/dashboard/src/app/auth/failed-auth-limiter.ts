/**
 * Throttles guessing of dashboard tokens: every wrong credential (a bearer token that is no
 * configured token, a wrong token posted to /api/v1/session) takes one attempt from its client's
 * bucket (its address: the TCP peer, or the address a trusted proxy appended) and from a bucket
 * shared by all clients. A wrong credential from a client whose bucket is empty, or from a client
 * with a recent wrong credential while the shared one is, is answered 429 with Retry-After instead of
 * 401. A right token is never throttled, whatever its address or anyone else sent (issue 50: a
 * throttle that also refused right tokens let anyone on the network lock the operators out); what
 * makes guessing hopeless is the tokens' length (>= 16 characters, 48 hex digits in the docs), not
 * the throttle, which keeps a guessing script slow and visible. Buckets refill continuously (token
 * buckets): a client may fail `perClient` times at once and then once every 60 s / `perClient`.
 *
 * Memory is bounded: at most `maxClients` clients are tracked; beyond that the idle ones (full
 * buckets) and then the oldest are forgotten, and an attacker rotating addresses still meets the
 * shared bucket.
 */
export interface FailedAuthLimits {
  /** Wrong credentials one client may send per minute (and at once). */
  readonly perClient: number;
  /** Wrong credentials all clients together may send per minute (and at once). */
  readonly total: number;
  /** Clients tracked at most. */
  readonly maxClients: number;
}

/** Defaults: an operator mistyping a token a few times is never throttled; a script guessing is. */
export const DEFAULT_FAILED_AUTH_LIMITS: FailedAuthLimits = { perClient: 10, total: 100, maxClients: 10_000 };

const MINUTE_MS = 60_000;

class Bucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly capacity: number,
    nowMs: number,
  ) {
    this.tokens = capacity;
    this.at = nowMs;
  }

  private refill(nowMs: number): void {
    const elapsed = Math.max(0, nowMs - this.at);
    this.tokens = Math.min(this.capacity, this.tokens + (elapsed * this.capacity) / MINUTE_MS);
    this.at = Math.max(this.at, nowMs);
  }

  /** Milliseconds until one attempt is available (0: now). */
  waitMs(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) * MINUTE_MS) / this.capacity);
  }

  take(nowMs: number): void {
    this.refill(nowMs);
    this.tokens = Math.max(0, this.tokens - 1);
  }

  full(nowMs: number): boolean {
    this.refill(nowMs);
    return this.tokens >= this.capacity;
  }
}

export class FailedAuthLimiter {
  private readonly clients = new Map<string, Bucket>();
  private readonly shared: Bucket;

  constructor(
    private readonly limits: FailedAuthLimits = DEFAULT_FAILED_AUTH_LIMITS,
    private readonly now: () => number = Date.now,
  ) {
    for (const [k, v] of Object.entries(limits)) {
      if (!Number.isInteger(v) || v < 1) throw new Error(`FailedAuthLimits.${k} must be a positive integer, got ${v}`);
    }
    this.shared = new Bucket(limits.total, now());
  }

  /** Milliseconds `client` must wait before its credential is checked (0: check it now). */
  retryAfterMs(client: string): number {
    const t = this.now();
    const own = this.clients.get(client);
    if (!own || own.full(t)) return 0;
    return Math.max(this.shared.waitMs(t), own.waitMs(t));
  }

  /** `client` sent a wrong credential. */
  recordFailure(client: string): void {
    const t = this.now();
    this.shared.take(t);
    let b = this.clients.get(client);
    if (!b) {
      this.makeRoom(t);
      b = new Bucket(this.limits.perClient, t);
      this.clients.set(client, b);
    }
    b.take(t);
  }

  /** Clients tracked now (for tests and metrics). */
  get trackedClients(): number {
    return this.clients.size;
  }

  private makeRoom(nowMs: number): void {
    if (this.clients.size < this.limits.maxClients) return;
    for (const [c, b] of this.clients) if (b.full(nowMs)) this.clients.delete(c);
    // Still full: forget the oldest (Map keeps insertion order); the shared bucket still holds them.
    for (const c of this.clients.keys()) {
      if (this.clients.size < this.limits.maxClients) break;
      this.clients.delete(c);
    }
  }
}

/**
 * The client a request counts against: its TCP peer, or, when that peer is a reverse proxy the
 * policy trusts, the last address the proxy appended to X-Forwarded-For (the one it saw).
 */
export function clientOf(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trustsProxy: (address: string | undefined) => boolean,
): string {
  const direct = peer ?? 'unknown';
  if (!trustsProxy(peer)) return direct;
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
  const hops = (header ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h.length > 0);
  return hops[hops.length - 1] ?? direct;
}
