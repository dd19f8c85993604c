import { clientOf, FailedAuthLimiter } from './failed-auth-limiter';

/** A limiter on a clock the test moves. */
function limiter(limits = { perClient: 3, total: 10, maxClients: 100 }) {
  let t = 1_000_000;
  const l = new FailedAuthLimiter(limits, () => t);
  return { l, advance: (ms: number) => (t += ms) };
}

/** A small deterministic generator (tests only: sequences of clients and steps). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0) / 2 ** 32);
}

describe('FailedAuthLimiter', () => {
  it('lets a client fail perClient times at once, then makes it wait until one attempt has refilled', () => {
    const { l, advance } = limiter();
    for (let i = 0; i < 3; i++) {
      expect(l.retryAfterMs('10.0.0.1')).toBe(0);
      l.recordFailure('10.0.0.1');
    }
    // 3 per minute: one attempt every 20 s.
    expect(l.retryAfterMs('10.0.0.1')).toBe(20_000);
    expect(l.retryAfterMs('10.0.0.2')).toBe(0);
    advance(19_999);
    expect(l.retryAfterMs('10.0.0.1')).toBe(1);
    advance(1);
    expect(l.retryAfterMs('10.0.0.1')).toBe(0);
    l.recordFailure('10.0.0.1');
    expect(l.retryAfterMs('10.0.0.1')).toBe(20_000);
  });

  it('the shared bucket stops a guesser rotating addresses after one guess each; clients without a wrong token are never throttled', () => {
    const { l, advance } = limiter();
    for (let i = 0; i < 10; i++) l.recordFailure(`10.0.1.${i}`);
    expect(l.retryAfterMs('10.0.1.0')).toBe(6_000); // 10 per minute overall
    expect(l.retryAfterMs('10.0.9.9')).toBe(0); // no wrong token on record: an operator's script
    l.recordFailure('10.0.9.9');
    expect(l.retryAfterMs('10.0.9.9')).toBe(6_000);
    advance(6_000);
    expect(l.retryAfterMs('10.0.9.9')).toBe(0);
  });

  it('tracks at most maxClients: idle clients are forgotten first, then the oldest', () => {
    const { l, advance } = limiter({ perClient: 2, total: 1_000, maxClients: 3 });
    l.recordFailure('a');
    l.recordFailure('b');
    advance(60_000); // a and b refilled: idle
    l.recordFailure('c');
    l.recordFailure('c');
    l.recordFailure('d'); // full: a and b go
    expect(l.trackedClients).toBe(2);
    l.recordFailure('e');
    l.recordFailure('f'); // full again, nobody idle: the oldest (c) goes
    expect(l.trackedClients).toBe(3);
    expect(l.retryAfterMs('c')).toBe(0);
  });

  it('never lets a client through more than perClient + minutes x perClient wrong credentials, nor refuses one it owes (random schedules)', () => {
    const MAX_STEP_MS = 3_000;
    for (let seed = 1; seed <= 50; seed++) {
      const rnd = lcg(seed);
      const { l, advance } = limiter({ perClient: 5, total: 1_000, maxClients: 100 });
      // Time on the limiter's injected clock, which the test moves: no wall time.
      let elapsed = 0;
      let accepted = 0;
      for (let i = 0; i < 400; i++) {
        const step = Math.floor(rnd() * MAX_STEP_MS);
        advance(step);
        elapsed += step;
        if (l.retryAfterMs('x') === 0) {
          l.recordFailure('x');
          accepted++;
        }
      }
      // The bucket: 5 at once, then 5 per minute of the clock.
      const allowance = 5 + (elapsed * 5) / 60_000;
      expect(accepted).toBeLessThanOrEqual(allowance + 1e-9);
      // Refused only while less than one attempt is left, and asked again within a step: unused at the
      // end are less than that one and one step's refill.
      expect(accepted).toBeGreaterThan(allowance - 1 - (MAX_STEP_MS * 5) / 60_000);
    }
  });

  it('refuses limits that are not positive integers', () => {
    expect(() => new FailedAuthLimiter({ perClient: 0, total: 1, maxClients: 1 })).toThrow(/perClient must be a positive integer/);
    expect(() => new FailedAuthLimiter({ perClient: 1, total: 1.5, maxClients: 1 })).toThrow(/total must be a positive integer/);
  });
});

describe('clientOf', () => {
  const trusts = (a: string | undefined) => a === '10.9.0.1';
  it('is the peer unless the peer is a trusted proxy; then the last address the proxy appended', () => {
    expect(clientOf('192.0.2.7', '203.0.113.5', trusts)).toBe('192.0.2.7');
    expect(clientOf('10.9.0.1', 'spoofed, 203.0.113.5', trusts)).toBe('203.0.113.5');
    expect(clientOf('10.9.0.1', ['1.1.1.1', '203.0.113.6'], trusts)).toBe('203.0.113.6');
    expect(clientOf('10.9.0.1', undefined, trusts)).toBe('10.9.0.1');
    expect(clientOf(undefined, undefined, trusts)).toBe('unknown');
  });
});
