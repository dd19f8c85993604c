import { MapWatchGuard } from './map-watch-guard';

/** A guard over a scripted bucket identity: `id` is what the server says, `null` when NATS does not answer. */
function setup(first: string | null) {
  let id: string | null = first;
  const rewatches: string[] = [];
  const guard = new MapWatchGuard({
    identity: async () => {
      if (id === null) throw new Error('TIMEOUT');
      return id;
    },
    rewatch: (why) => void rewatches.push(why),
  });
  return { guard, rewatches, set: (next: string | null) => void (id = next) };
}

describe('MapWatchGuard', () => {
  it('leaves a watch on the bucket that still exists alone', async () => {
    const { guard, rewatches } = setup('2026-12-07T15:00:00Z');
    await guard.starting();
    await guard.check();
    await guard.check();
    expect(rewatches).toEqual([]);
  });

  it('watches again once when the bucket was created again, though no heartbeat failed', async () => {
    const { guard, rewatches, set } = setup('created-1');
    await guard.starting();
    set('created-2');
    await guard.check();
    expect(rewatches).toEqual(['the map bucket was created again at created-2 (NATS lost its store?)']);
    // The restarted watch records the new bucket; nothing fires again.
    await guard.starting();
    await guard.check();
    await guard.check();
    expect(rewatches).toHaveLength(1);
  });

  it('does not fire twice before the new watch started', async () => {
    const { guard, rewatches, set } = setup('created-1');
    await guard.starting();
    set('created-2');
    await guard.check();
    await guard.check();
    expect(rewatches).toHaveLength(1);
  });

  it('after a NATS failure, watches again at the first check that reaches NATS', async () => {
    const { guard, rewatches, set } = setup('created-1');
    await guard.starting();
    guard.natsFailed();
    set(null);
    await guard.check();
    expect(rewatches).toEqual([]);
    set('created-1');
    await guard.check();
    expect(rewatches).toEqual(['NATS failed since the map watch started']);
  });

  it('a check that cannot reach NATS counts as a failure', async () => {
    const { guard, rewatches, set } = setup('created-1');
    await guard.starting();
    set(null);
    await guard.check();
    set('created-1');
    await guard.check();
    expect(rewatches).toEqual(['NATS failed since the map watch started']);
  });

  it('a watch started without a known identity is watched again at the first check that reads one', async () => {
    const { guard, rewatches, set } = setup(null);
    await guard.starting();
    set('created-1');
    await guard.check();
    expect(rewatches).toEqual(['the map bucket was not known when the watch started']);
  });

  it('runs one check at a time', async () => {
    let release!: () => void;
    let calls = 0;
    const rewatches: string[] = [];
    const guard = new MapWatchGuard({
      identity: () => {
        calls++;
        return calls === 1 ? Promise.resolve('a') : new Promise<string>((r) => (release = () => r('b')));
      },
      rewatch: (why) => void rewatches.push(why),
    });
    await guard.starting();
    const first = guard.check();
    await guard.check();
    expect(calls).toBe(2);
    release();
    await first;
    expect(rewatches).toHaveLength(1);
  });
});
