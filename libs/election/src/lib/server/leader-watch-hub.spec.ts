import { LeaderView, LeaseRecord, notOlderLease } from '../lease';
import { InMemoryLeaseStore } from '../lease-store';
import { LeaderWatchHub } from './leader-watch-hub';

const NOW = 1_000_000;
const lease = (holder: string, token: number): LeaseRecord => ({
  v: 1,
  holder,
  token,
  acquiredAtMs: NOW,
  renewedAtMs: NOW,
  leaseExpiresAtMs: NOW + 60_000,
  ttlMs: 60_000,
  released: false,
});

describe('notOlderLease', () => {
  it('orders by term first, then by revision', () => {
    expect(notOlderLease({ token: 3, revision: 9 }, { token: 3, revision: 9 })).toBe(true);
    expect(notOlderLease({ token: 3, revision: 10 }, { token: 3, revision: 9 })).toBe(true);
    expect(notOlderLease({ token: 3, revision: 8 }, { token: 3, revision: 9 })).toBe(false);
    // A bucket created again: revisions restart, the new term's token is higher.
    expect(notOlderLease({ token: 4, revision: 1 }, { token: 3, revision: 500 })).toBe(true);
    expect(notOlderLease({ token: 2, revision: 900 }, { token: 3, revision: 5 })).toBe(false);
    // The empty key of a recreated bucket (token 0) does not replace a held term; its expiry does.
    expect(notOlderLease({ token: 0, revision: 0 }, { token: 3, revision: 5 })).toBe(false);
  });
});

describe('LeaderWatchHub', () => {
  it('reports the new term of a bucket created again, whose revisions restarted below the held one', async () => {
    const store = new InMemoryLeaseStore();
    const hub = new LeaderWatchHub({ store, now: () => NOW, resyncMs: 60_000 });
    const seen: LeaderView[] = [];
    const unsubscribe = hub.subscribe('w', (v) => seen.push(v));
    try {
      // Many renewals: the held revision is well above what a new bucket starts at.
      let revision = await store.create('w', lease('a', 3));
      for (let i = 0; i < 20; i++) revision = await store.update('w', lease('a', 3), revision);
      await new Promise((r) => setImmediate(r));
      expect(seen.at(-1)).toMatchObject({ state: 'held', leader: 'a', fencingToken: 3 });
      // NATS lost its store: the bucket comes back empty and the next term starts at revision 1.
      store.wipe();
      await store.create('w', lease('b', 4));
      await new Promise((r) => setImmediate(r));
      expect(seen.at(-1)).toMatchObject({ state: 'held', leader: 'b', fencingToken: 4, revision: 1 });
    } finally {
      unsubscribe();
      hub.close();
    }
  });
});
