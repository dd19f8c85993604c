import { type AssignmentMap, InvalidMessageError } from '@defender/contracts';
import { buildAssignmentMap } from '@defender/membership';
import { RevisionConflictError, type StoredMap } from '@defender/nats-kv';
import { DeposedError, MapKeeper } from './map-keeper';

const NOW = Date.UTC(2026, 11, 1, 8);

function mapOf(version: number, token: string): AssignmentMap {
  return buildAssignmentMap({
    version,
    now: new Date(NOW),
    fencingToken: token,
    controllerId: 'c-old',
    trigger: 'cold_start',
    state: 'STABLE',
    lifecycleState: 'stable',
    firstAssignmentAt: new Date(NOW).toISOString(),
    assignments: { 'a:1': 'defender-0' },
    weights: { 'a:1': 1 },
    defenders: [{ id: 'defender-0', capacity: 1 }],
    lastMovedAt: {},
    calculationDurationMs: 0,
    movement: { chambersMoved: 0, movedWeight: 0, movedWeightFraction: 0, floorFraction: 0 },
  });
}

/** A map bucket the test scripts: `stored` is what a read returns (or throws), `conflict` makes the next publish lose. */
function setup(token = '7') {
  const bucket: { stored: StoredMap | null | Error; revision: number; conflict: StoredMap | undefined } = { stored: null, revision: 0, conflict: undefined };
  const writes: { version: number; expected: number | null; token: string }[] = [];
  const log: string[] = [];
  let leader = true;
  const keeper = new MapKeeper({
    maps: {
      read: async () => {
        if (bucket.stored instanceof Error) throw bucket.stored;
        return bucket.stored;
      },
      lastRevision: async () => bucket.revision,
      publish: async (map, expected) => {
        if (bucket.conflict) {
          bucket.stored = bucket.conflict;
          bucket.conflict = undefined;
          throw new RevisionConflictError('map', 'head', expected ?? 0);
        }
        writes.push({ version: map.version, expected, token: map.fencingToken });
        return ++bucket.revision;
      },
    },
    term: { fencingToken: token, isLeader: () => leader },
    controllerId: 'c-new',
    now: () => NOW,
    ensureLeader: () => {
      if (!leader) throw new DeposedError('term ended');
    },
    observer: { published: (m, _r, why) => void log.push(`published v${m.version} ${why}`), error: (what) => void log.push(`error: ${what}`) },
  });
  return { keeper, bucket, writes, log, depose: () => void (leader = false) };
}

describe('MapKeeper', () => {
  it('takes over a map of an older term: re-stamped with its token, one version up, by compare-and-set', async () => {
    const t = setup();
    t.bucket.stored = { map: mapOf(4, '6'), revision: 12 };
    t.bucket.revision = 12;
    await t.keeper.read();
    expect(await t.keeper.restamp()).toBe(true);
    expect(t.writes).toEqual([{ version: 5, expected: 12, token: '7' }]);
    expect(t.keeper.map).toMatchObject({ version: 5, fencingToken: '7', controllerId: 'c-new', trigger: 'takeover' });
    expect(t.log).toEqual(['published v5 takeover']);
    // Its own map: nothing to re-stamp.
    expect(await t.keeper.restamp()).toBe(true);
    expect(t.writes).toHaveLength(1);
  });

  it('stops when a newer term published', async () => {
    const t = setup();
    t.bucket.stored = { map: mapOf(4, '8'), revision: 3 };
    await t.keeper.read();
    expect(() => t.keeper.assertNotSuperseded()).toThrow(DeposedError);
    await expect(t.keeper.restamp()).rejects.toThrow('a newer term (token 8) already published');
  });

  it('a lost compare-and-set reads the map again: false to re-decide, deposed when the winner is a newer term', async () => {
    const t = setup();
    await t.keeper.read();
    t.bucket.conflict = { map: mapOf(2, '7'), revision: 5 };
    expect(await t.keeper.publish(mapOf(1, '7'), null, 'cold_start')).toBe(false);
    expect(t.keeper.map?.version).toBe(2);
    t.bucket.conflict = { map: mapOf(3, '9'), revision: 6 };
    await expect(t.keeper.publish(mapOf(3, '7'), null, 'crash')).rejects.toThrow('a newer term (token 9) published');
    expect(t.log).toEqual(['error: publish the map', 'error: publish the map']);
  });

  it('numbers the next map above every version seen, also after the bucket lost the map', async () => {
    const t = setup();
    t.bucket.stored = { map: mapOf(4, '7'), revision: 9 };
    await t.keeper.read();
    t.keeper.noteVersion(11);
    t.bucket.stored = null;
    await t.keeper.read();
    // Ours is kept as the base, written by create.
    expect(t.keeper.map?.version).toBe(4);
    const result = { assignments: { 'a:1': 'defender-0' }, lastMovedAt: {}, stats: { calculationDurationMs: 1, chambersMoved: 0, movedWeight: 0, movedWeightFraction: 0, floorFraction: 0 } } as unknown as Parameters<MapKeeper['build']>[0];
    const next = t.keeper.build(result, [{ id: 'defender-0', capacity: 1 }], [{ key: 'a:1', weight: 1 }], NOW, { trigger: 'crash', state: 'REBALANCING', lifecycle: 'stable' });
    expect(next.version).toBe(12);
    expect(await t.keeper.publish(next, result, 'crash')).toBe(true);
    expect(t.writes.at(-1)).toEqual({ version: 12, expected: 0, token: '7' });
  });

  it('an unreadable map is written over by compare-and-set on the bucket\'s last revision', async () => {
    const t = setup();
    t.bucket.stored = new InvalidMessageError('map', 'not json');
    t.bucket.revision = 21;
    await t.keeper.read();
    expect(t.keeper.map).toBeUndefined();
    await t.keeper.publish(mapOf(1, '7'), null, 'cold_start');
    expect(t.writes).toEqual([{ version: 1, expected: 21, token: '7' }]);
  });

  it('publishes nothing once deposed', async () => {
    const t = setup();
    t.depose();
    await expect(t.keeper.publish(mapOf(1, '7'), null, 'cold_start')).rejects.toThrow(DeposedError);
    expect(t.writes).toEqual([]);
  });
});
