import { seededRandom } from '@defender/hashing';
import { ElectionCallError } from '../errors';
import { InMemoryLeaseStore } from '../lease-store';
import { LeaseInfo } from '../proto';
import { ElectionAuthority } from '../server/election-authority';
import { LeaderWatchHub } from '../server/leader-watch-hub';
import { CampaignRequest, LeaseRequest } from '../validation';
import { InProcessElectionTransport } from './in-process-transport';
import { DeposedReason, ElectionTransport, LeaderElection, LeadershipTerm } from './leader-election';

// Every test runs on Jest's fake clock: the loop's timers, its monotonic clock and the agent's wall
// clock all read it, so renew intervals, deadlines and backoff are judged exactly, however busy the
// machine is (real time only bounds how long a test may take, through Jest's hang guard).
const TTL = 600;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Advances the fake clock until `cond` holds; `maxMs` of fake time is the hang guard. Returns the fake ms it took. */
async function until(what: string, cond: () => boolean, maxMs = 10 * TTL): Promise<number> {
  const start = jest.now();
  while (!cond()) {
    if (jest.now() - start > maxMs) throw new Error(`${what}: not reached within ${maxMs} ms of fake time`);
    await jest.advanceTimersByTimeAsync(5);
  }
  return jest.now() - start;
}

/** Advances the fake clock by `ms`, running every timer and the promises they settle on the way. */
const elapse = (ms: number) => jest.advanceTimersByTimeAsync(ms);

/** A transport whose calls can be made to fail or to answer late; it records when each call was made. */
class FlakyTransport implements ElectionTransport {
  down = false;
  delayMs = 0;
  /** Fake-clock ms of every call, in order. */
  readonly callTimes: number[] = [];
  get calls(): number {
    return this.callTimes.length;
  }
  constructor(private readonly inner: ElectionTransport) {}
  campaign(req: CampaignRequest): Promise<LeaseInfo> {
    return this.call(() => this.inner.campaign(req));
  }
  renew(req: LeaseRequest): Promise<LeaseInfo> {
    return this.call(() => this.inner.renew(req));
  }
  release(req: LeaseRequest) {
    return this.call(() => this.inner.release(req));
  }
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    this.callTimes.push(jest.now());
    if (this.down) throw new ElectionCallError('agent unreachable', 14, true);
    const r = await fn();
    if (this.delayMs > 0) await sleep(this.delayMs);
    return r;
  }
}

interface Log {
  events: { who: string; what: 'elected' | DeposedReason; token: number; at: number }[];
  leases: LeaseInfo[];
  errors: Error[];
}

function candidate(
  name: string,
  transport: ElectionTransport,
  log: Log,
  over: Partial<ConstructorParameters<typeof LeaderElection>[0]> = {},
) {
  return new LeaderElection({
    transport,
    election: 'unit',
    candidate: name,
    ttlMs: TTL,
    random: seededRandom(name.length * 7919),
    monotonicNow: () => jest.now(),
    onElected: (t: LeadershipTerm) =>
      log.events.push({ who: name, what: 'elected', token: t.fencingToken, at: jest.now() }),
    onDeposed: (t: LeadershipTerm, reason: DeposedReason) =>
      log.events.push({ who: name, what: reason, token: t.fencingToken, at: jest.now() }),
    onLease: (l) => log.leases.push(l),
    onError: (e) => log.errors.push(e),
    ...over,
  });
}

function setup(skewMs = 50) {
  const store = new InMemoryLeaseStore();
  const now = () => jest.now();
  const authority = new ElectionAuthority({ store, clockSkewMs: skewMs, now });
  const hub = new LeaderWatchHub({ store, resyncMs: 100, now });
  const transport = new InProcessElectionTransport(authority, hub);
  const log: Log = { events: [], leases: [], errors: [] };
  return { store, authority, hub, transport, log };
}

describe('LeaderElection', () => {
  const running: LeaderElection[] = [];
  const hubs: LeaderWatchHub[] = [];
  beforeEach(() => {
    jest.useFakeTimers({ now: Date.UTC(2026, 0, 1) });
  });
  afterEach(async () => {
    // Stopping may wait on a timer (a late answer in flight), so the fake clock keeps moving meanwhile.
    let stopped = false;
    const stopping = Promise.all(running.splice(0).map((c) => c.stop())).finally(() => (stopped = true));
    await until('every candidate stopped', () => stopped);
    await stopping;
    hubs.splice(0).forEach((h) => h.close());
    jest.useRealTimers();
  });
  const track = <T extends LeaderElection>(c: T) => (running.push(c), c);

  it('rejects a renew deadline that is not between the renew interval and the TTL', () => {
    const { transport, log } = setup();
    expect(() => candidate('a', transport, log, { renewDeadlineMs: TTL })).toThrow(RangeError);
    expect(() => candidate('a', transport, log, { renewIntervalMs: 500, renewDeadlineMs: 400 })).toThrow(
      RangeError,
    );
  });

  it('is elected, renews every TTL/2, and on stop steps down before releasing', async () => {
    const { transport, log, authority, hub } = setup();
    hubs.push(hub);
    const a = track(candidate('a', transport, log));
    const startedAt = jest.now();
    a.start();
    await until('elected', () => a.isLeader());
    expect(a.currentTerm()).toMatchObject({ election: 'unit', candidate: 'a', fencingToken: 1 });
    await elapse(startedAt + 2 * TTL + TTL / 4 - jest.now());
    // The campaign's grant, then a renewal every TTL/2 by the agent's clock (neither more nor less
    // often), each the same term, without a gap in leadership.
    expect(log.leases.map((l) => l.agentTimeMs - startedAt)).toEqual([0, 1, 2, 3, 4].map((k) => (k * TTL) / 2));
    expect(log.leases.every((l) => l.isLeader && l.fencingToken === 1)).toBe(true);
    expect(log.events.map((e) => e.what)).toEqual(['elected']);
    expect(a.leaseRemainingMs()).toBeGreaterThan(0);

    await a.stop();
    expect(a.isLeader()).toBe(false);
    expect(log.events.map((e) => e.what)).toEqual(['elected', 'stopped']);
    expect(await authority.getLeader('unit')).toMatchObject({ state: 'released', fencingToken: 1 });
  });

  it('asks the candidate for its token floor before campaigning: a new term outranks it; a floor it cannot read is reported and skipped', async () => {
    const floored = setup();
    hubs.push(floored.hub);
    const a = track(candidate('a', floored.transport, floored.log, { minToken: async () => 41 }));
    a.start();
    await until('a elected', () => a.isLeader());
    expect(a.currentTerm()?.fencingToken).toBe(42);

    const failing = setup();
    hubs.push(failing.hub);
    const b = track(candidate('b', failing.transport, failing.log, { minToken: () => Promise.reject(new Error('map bucket unreachable')) }));
    b.start();
    await until('b elected', () => b.isLeader());
    expect(b.currentTerm()?.fencingToken).toBe(1);
    expect(failing.log.errors.map((e) => e.message)).toContain('map bucket unreachable');
  });

  it('a standby takes over at once when the leader stops, with the next token', async () => {
    const { transport, log, hub } = setup();
    hubs.push(hub);
    const a = track(candidate('a', transport, log));
    a.start();
    await until('a elected', () => a.isLeader());
    const b = track(candidate('b', transport, log));
    b.start();
    // Two renewals of a's later, b, denied, is still waiting as standby.
    await elapse(TTL);
    expect(log.leases.filter((l) => l.leader === 'a').length).toBeGreaterThanOrEqual(3);
    expect(b.isLeader()).toBe(false);
    expect(log.events.map((e) => `${e.who} ${e.what}`)).toEqual(['a elected']);
    const aLease = log.leases.filter((l) => l.leader === 'a').at(-1)!;
    await a.stop();
    const releasedAt = jest.now();
    await until('b elected', () => b.isLeader());
    // The release (not expiry) handed it over, and the watch woke the standby: b's term began the
    // moment a released, long before a's lease would have run out.
    const bLease = log.leases.find((l) => l.leader === 'b')!;
    expect(bLease.acquiredAtMs).toBe(releasedAt);
    expect(bLease.acquiredAtMs).toBeLessThan(aLease.leaseExpiresAtMs);
    expect(b.currentTerm()?.fencingToken).toBe(2);
  });

  it('a leader cut off from every agent steps down before the lease can pass to a standby', async () => {
    const { transport, log } = setup();
    const flaky = new FlakyTransport(transport);
    const a = track(candidate('a', flaky, log));
    a.start();
    await until('a elected', () => a.isLeader());
    const b = track(candidate('b', transport, log));
    b.start();
    flaky.down = true;
    await until('b elected', () => b.isLeader(), 5 * TTL);
    const deposed = log.events.find((e) => e.who === 'a' && e.what !== 'elected')!;
    const elected = log.events.find((e) => e.who === 'b' && e.what === 'elected')!;
    expect(deposed.what).toBe('renew-deadline');
    expect(deposed.at).toBeLessThan(elected.at);
    // By the agent's clock: b's term began only after a's last lease had run out.
    const aLast = log.leases.filter((l) => l.leader === 'a').at(-1)!;
    const bFirst = log.leases.find((l) => l.leader === 'b')!;
    expect(bFirst.acquiredAtMs).toBeGreaterThan(aLast.leaseExpiresAtMs);
    expect(elected.token).toBe(2);
    expect(a.isLeader()).toBe(false);
    expect(log.errors.some((e) => e instanceof ElectionCallError)).toBe(true);

    // Back online: a is a standby now, and b stays leader through its renewals.
    flaky.down = false;
    const callsBack = flaky.calls;
    await elapse(TTL * 2);
    expect(flaky.calls).toBeGreaterThan(callsBack); // a did reach the agent again, and was denied
    expect(b.isLeader()).toBe(true);
    expect(a.isLeader()).toBe(false);
    expect(log.events.map((e) => `${e.who} ${e.what}`)).toEqual(['a elected', 'a renew-deadline', 'b elected']);
  });

  it('steps down as soon as an agent says the term was superseded', async () => {
    const { transport, log, store } = setup();
    const a = track(candidate('a', transport, log));
    a.start();
    await until('a elected', () => a.isLeader());
    // An operator deletes the key and someone else campaigns: a's next renewal is refused.
    store.delete('unit');
    await transport.campaign({ election: 'unit', candidate: 'intruder', ttlMs: 60_000 });
    await until('a deposed', () => log.events.some((e) => e.what === 'lost'), 2 * TTL);
    expect(a.isLeader()).toBe(false);
    expect(log.events.map((e) => e.what)).toEqual(['elected', 'lost']);
  });

  it('does not lead on a grant that arrives after its renew deadline, and recovers the same term', async () => {
    const { transport, log } = setup();
    const flaky = new FlakyTransport(transport);
    flaky.delayMs = TTL; // every answer arrives later than 0.8 x TTL
    const a = track(candidate('a', flaky, log));
    a.start();
    await until('two late grants', () => log.leases.length >= 2);
    expect(log.leases.every((l) => l.isLeader && l.fencingToken === 1)).toBe(true);
    expect(log.events).toEqual([]);
    expect(a.isLeader()).toBe(false);
    flaky.delayMs = 0;
    await until('a elected', () => a.isLeader());
    // The late grants were the same term, continued rather than replaced.
    expect(a.currentTerm()?.fencingToken).toBe(1);
  });

  it('backs off while the agents are unreachable and campaigns again when they return', async () => {
    const { transport, log } = setup();
    const flaky = new FlakyTransport(transport);
    flaky.down = true;
    const backoff = { baseMs: 20, maxMs: 200 };
    const a = track(candidate('a', flaky, log, { backoff }));
    a.start();
    await elapse(1_000);
    // Exponential with equal jitter: the k-th wait is in [d/2, d), d = min(200, 20 * 2^k): about
    // 8 calls in a second, not hundreds.
    const gaps = flaky.callTimes.slice(1).map((t, i) => t - flaky.callTimes[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(7);
    gaps.forEach((gap, k) => {
      const d = Math.min(backoff.maxMs, backoff.baseMs * 2 ** k);
      expect(gap).toBeGreaterThanOrEqual(d / 2);
      expect(gap).toBeLessThan(d);
    });
    expect(log.errors.length).toBe(flaky.calls);
    flaky.down = false;
    await until('a elected', () => a.isLeader(), 2 * backoff.maxMs);
  });
});
