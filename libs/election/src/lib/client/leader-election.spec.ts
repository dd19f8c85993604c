import { performance } from 'node:perf_hooks';
import { seededRandom } from '@defender/hashing';
import { ElectionCallError } from '../errors';
import { InMemoryLeaseStore } from '../lease-store';
import { LeaseInfo } from '../proto';
import { ElectionAuthority } from '../server/election-authority';
import { LeaderWatchHub } from '../server/leader-watch-hub';
import { CampaignRequest, LeaseRequest } from '../validation';
import { InProcessElectionTransport } from './in-process-transport';
import { DeposedReason, ElectionTransport, LeaderElection, LeadershipTerm } from './leader-election';

const TTL = 600;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A transport whose calls can be made to fail or to answer late. */
class FlakyTransport implements ElectionTransport {
  down = false;
  delayMs = 0;
  calls = 0;
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
    this.calls++;
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
    onElected: (t: LeadershipTerm) =>
      log.events.push({ who: name, what: 'elected', token: t.fencingToken, at: performance.now() }),
    onDeposed: (t: LeadershipTerm, reason: DeposedReason) =>
      log.events.push({ who: name, what: reason, token: t.fencingToken, at: performance.now() }),
    onLease: (l) => log.leases.push(l),
    onError: (e) => log.errors.push(e),
    ...over,
  });
}

function setup(skewMs = 50) {
  const store = new InMemoryLeaseStore();
  const authority = new ElectionAuthority({ store, clockSkewMs: skewMs });
  const hub = new LeaderWatchHub({ store, resyncMs: 100 });
  const transport = new InProcessElectionTransport(authority, hub);
  const log: Log = { events: [], leases: [], errors: [] };
  return { store, authority, hub, transport, log };
}

describe('LeaderElection', () => {
  const running: LeaderElection[] = [];
  const hubs: LeaderWatchHub[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop()));
    hubs.splice(0).forEach((h) => h.close());
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
    a.start();
    await until('elected', () => a.isLeader());
    expect(a.currentTerm()).toMatchObject({ election: 'unit', candidate: 'a', fencingToken: 1 });
    await sleep(TTL * 2);
    // Renewed, never more often than every TTL/2 (judged by the agent's clock), without a gap in leadership.
    expect(log.leases.length).toBeGreaterThanOrEqual(2);
    expect(log.leases.every((l) => l.isLeader && l.fencingToken === 1)).toBe(true);
    const gaps = log.leases.slice(1).map((l, i) => l.agentTimeMs - log.leases[i]!.agentTimeMs);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(TTL / 2 - 20);
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
    await sleep(TTL);
    expect(b.isLeader()).toBe(false);
    const aLease = log.leases.filter((l) => l.leader === 'a').at(-1)!;
    await a.stop();
    await until('b elected', () => b.isLeader());
    // The release (not expiry) handed it over, and the watch woke the standby: b's term began
    // before a's lease would have run out.
    const bLease = log.leases.find((l) => l.leader === 'b')!;
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
    expect(elected.token).toBe(2);
    expect(a.isLeader()).toBe(false);
    expect(log.errors.some((e) => e instanceof ElectionCallError)).toBe(true);

    // Back online: a is a standby now, and b stays leader.
    flaky.down = false;
    await sleep(TTL * 2);
    expect(b.isLeader()).toBe(true);
    expect(a.isLeader()).toBe(false);
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
  });

  it('does not lead on a grant that arrives after its renew deadline, and recovers the same term', async () => {
    const { transport, log } = setup();
    const flaky = new FlakyTransport(transport);
    flaky.delayMs = TTL; // every answer arrives later than 0.8 x TTL
    const a = track(candidate('a', flaky, log));
    a.start();
    await sleep(TTL * 2);
    expect(log.events).toEqual([]);
    flaky.delayMs = 0;
    await until('a elected', () => a.isLeader());
    // The late grants were the same term, continued rather than replaced.
    expect(a.currentTerm()?.fencingToken).toBe(1);
  });

  it('backs off while the agents are unreachable and campaigns again when they return', async () => {
    const { transport, log } = setup();
    const flaky = new FlakyTransport(transport);
    flaky.down = true;
    const a = track(candidate('a', flaky, log, { backoff: { baseMs: 20, maxMs: 200 } }));
    a.start();
    await sleep(1_000);
    // Exponential: 10-20, 20-40, 40-80, 80-160, then <= 200 ms: about 8 calls in a second, not hundreds.
    expect(flaky.calls).toBeGreaterThanOrEqual(3);
    expect(flaky.calls).toBeLessThanOrEqual(14);
    flaky.down = false;
    await until('a elected', () => a.isLeader(), 10_000);
  });
});
