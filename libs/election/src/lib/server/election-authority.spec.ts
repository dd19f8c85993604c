import { ContentionError, LeaseStoreUnavailableError, RevisionConflictError } from '../errors';
import { LeaseRecord } from '../lease';
import { InMemoryLeaseStore } from '../lease-store';
import { ElectionAuthority } from './election-authority';

function setup(start = 1_000_000) {
  const store = new InMemoryLeaseStore();
  let now = start;
  const events: string[] = [];
  const authority = new ElectionAuthority({
    store,
    clockSkewMs: 500,
    now: () => now,
    events: {
      granted: (e) => events.push(`granted ${e.candidate} #${e.token} after ${e.previousHolder ?? '-'}`),
      renewRejected: (e) => events.push(`renew-rejected ${e.candidate} #${e.token} ${e.reason}`),
      released: (e) => events.push(`released ${e.candidate} #${e.token}`),
      conflict: (e) => events.push(`conflict ${e.attempt}`),
    },
  });
  return { store, authority, events, advance: (ms: number) => (now += ms), now: () => now };
}

describe('ElectionAuthority', () => {
  it('grants, continues, denies, renews, releases and hands over with a higher token', async () => {
    const { authority, events, advance, now } = setup();
    const a1 = await authority.campaign({ election: 'e', candidate: 'a', ttlMs: 2_000 });
    expect(a1).toMatchObject({
      kind: 'granted',
      isLeader: true,
      ttlMs: 2_000,
      view: { leader: 'a', fencingToken: 1, state: 'held' },
    });
    expect(a1.view.leaseExpiresAtMs).toBe(now() + 2_000);

    const again = await authority.campaign({ election: 'e', candidate: 'a', ttlMs: 2_000 });
    expect(again).toMatchObject({ kind: 'extended', isLeader: true, view: { fencingToken: 1 } });

    const b1 = await authority.campaign({ election: 'e', candidate: 'b', ttlMs: 2_000 });
    expect(b1).toMatchObject({
      kind: 'denied',
      isLeader: false,
      retryAfterMs: 2_500,
      view: { leader: 'a', fencingToken: 1 },
    });

    advance(1_000);
    const r = await authority.renew({ election: 'e', candidate: 'a', fencingToken: 1 });
    expect(r).toMatchObject({ kind: 'renewed', isLeader: true, view: { leaseExpiresAtMs: now() + 2_000 } });

    advance(2_200); // expired 200 ms ago: within the 500 ms skew margin
    expect(await authority.campaign({ election: 'e', candidate: 'b', ttlMs: 2_000 })).toMatchObject({
      kind: 'denied',
      retryAfterMs: 300,
    });
    advance(300);
    const b2 = await authority.campaign({ election: 'e', candidate: 'b', ttlMs: 2_000 });
    expect(b2).toMatchObject({ kind: 'granted', isLeader: true, view: { leader: 'b', fencingToken: 2 } });

    const stale = await authority.renew({ election: 'e', candidate: 'a', fencingToken: 1 });
    expect(stale).toMatchObject({
      kind: 'rejected',
      isLeader: false,
      rejection: 'superseded',
      view: { leader: 'b', fencingToken: 2 },
    });
    expect(await authority.release({ election: 'e', candidate: 'a', fencingToken: 1 })).toMatchObject({
      released: false,
    });

    const rel = await authority.release({ election: 'e', candidate: 'b', fencingToken: 2 });
    expect(rel).toMatchObject({ released: true, view: { state: 'released', leader: null, fencingToken: 2 } });
    const a3 = await authority.campaign({ election: 'e', candidate: 'a', ttlMs: 2_000 });
    expect(a3).toMatchObject({ kind: 'granted', view: { leader: 'a', fencingToken: 3 } });

    expect(events).toEqual([
      'granted a #1 after -',
      'granted b #2 after a',
      'renew-rejected a #1 superseded',
      'released b #2',
      'granted a #3 after b',
    ]);
  });

  it('keeps elections apart', async () => {
    const { authority } = setup();
    await authority.campaign({ election: 'x', candidate: 'a', ttlMs: 2_000 });
    expect(await authority.campaign({ election: 'y', candidate: 'b', ttlMs: 2_000 })).toMatchObject({
      isLeader: true,
      view: { fencingToken: 1 },
    });
    expect(await authority.getLeader('x')).toMatchObject({ leader: 'a', state: 'held' });
    expect(await authority.getLeader('z')).toMatchObject({ leader: null, state: 'none', fencingToken: 0 });
  });

  it('decides again on the new record when a compare-and-set loses', async () => {
    const { store, authority, events, now } = setup();
    const realUpdate = store.update.bind(store);
    let raced = false;
    await authority.campaign({ election: 'e', candidate: 'a', ttlMs: 2_000 });
    // Another agent grants a new term to c between our read and our write.
    store.update = async (election: string, record: LeaseRecord, revision: number) => {
      if (!raced) {
        raced = true;
        await realUpdate(
          election,
          { ...record, holder: 'c', token: 2, acquiredAtMs: now(), leaseExpiresAtMs: now() + 9_000 },
          revision,
        );
      }
      return realUpdate(election, record, revision);
    };
    const r = await authority.renew({ election: 'e', candidate: 'a', fencingToken: 1 });
    expect(r).toMatchObject({
      isLeader: false,
      rejection: 'superseded',
      view: { leader: 'c', fencingToken: 2 },
    });
    expect(events).toContain('conflict 1');
  });

  it('gives up with ContentionError after maxAttempts lost races', async () => {
    const store = new InMemoryLeaseStore();
    store.create = async (election: string) => {
      throw new RevisionConflictError(election, 0);
    };
    const authority = new ElectionAuthority({ store, clockSkewMs: 0, maxAttempts: 3 });
    await expect(authority.campaign({ election: 'e', candidate: 'a', ttlMs: 2_000 })).rejects.toBeInstanceOf(
      ContentionError,
    );
  });

  it('passes store outages through', async () => {
    const { store, authority } = setup();
    store.failWith = new LeaseStoreUnavailableError('down');
    await expect(authority.campaign({ election: 'e', candidate: 'a', ttlMs: 2_000 })).rejects.toBeInstanceOf(
      LeaseStoreUnavailableError,
    );
  });

  it('never reuses a token after an operator deletes the key', async () => {
    const { store, authority } = setup();
    for (let i = 0; i < 3; i++) {
      const r = await authority.campaign({ election: 'e', candidate: `c${i}`, ttlMs: 2_000 });
      await authority.release({ election: 'e', candidate: `c${i}`, fencingToken: r.view.fencingToken });
    }
    expect((await authority.getLeader('e')).fencingToken).toBe(3);
    store.delete('e');
    const next = await authority.campaign({ election: 'e', candidate: 'z', ttlMs: 2_000 });
    expect(next.view.fencingToken).toBeGreaterThan(3);
  });

  it('never reuses a token after NATS lost the bucket (it comes back empty): tokens go on above every one this agent saw', async () => {
    const { store, authority, advance } = setup();
    const first = await authority.campaign({ election: 'e', candidate: 'a', ttlMs: 2_000 });
    expect(first.view.fencingToken).toBe(1);
    advance(5_000);
    const second = await authority.campaign({ election: 'e', candidate: 'b', ttlMs: 2_000 });
    expect(second.view.fencingToken).toBe(2);
    store.wipe();
    const next = await authority.campaign({ election: 'e', candidate: 'c', ttlMs: 2_000 });
    expect(next).toMatchObject({ kind: 'granted', isLeader: true });
    expect(next.view.fencingToken).toBe(3);
  });

  it('grants above the candidate\'s min token when every agent lost its memory with the bucket; a continued term keeps its token', async () => {
    const { store, authority, advance } = setup();
    // A fresh agent on an empty bucket: without a floor the token would be 1, below the newest map's 41.
    const granted = await authority.campaign({ election: 'e', candidate: 'a', ttlMs: 2_000, minToken: 41 });
    expect(granted).toMatchObject({ kind: 'granted', isLeader: true });
    expect(granted.view.fencingToken).toBe(42);
    // The holder asking again (any floor) continues the same term.
    expect((await authority.campaign({ election: 'e', candidate: 'a', ttlMs: 2_000, minToken: 100 })).view.fencingToken).toBe(42);
    advance(5_000);
    // A floor below the record's token changes nothing: the next term is the record's + 1.
    expect((await authority.campaign({ election: 'e', candidate: 'b', ttlMs: 2_000, minToken: 7 })).view.fencingToken).toBe(43);
    expect((await store.get('e')).record?.token).toBe(43);
  });
});
