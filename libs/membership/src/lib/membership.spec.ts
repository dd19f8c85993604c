import fc from 'fast-check';
import { parseAssignmentMap } from '@defender/contracts';
import { buildAssignmentMap } from './build-map';
import { ownerEpoch } from './owner-epoch';
import { DefenderLifecycle, IllegalTransitionError } from './defender-state';
import { HeartbeatClock } from './heartbeat-clock';
import { defenderMapScope, diffOwnership, lowestDefenderId, ownedChambers } from './ownership';

describe('ownership', () => {
  it('extracts one defender\'s chambers and diffs owned sets', () => {
    const map = { assignments: { 't1:c2': 'defender-1', 't1:c1': 'defender-0', 't2:c1': 'defender-1' } };
    expect(ownedChambers(map, 'defender-1')).toEqual(['t1:c2', 't2:c1']);
    expect(ownedChambers(map, 'defender-7')).toEqual([]);
    expect(diffOwnership(['a', 'b', 'c'], ['c', 'd', 'b'])).toEqual({ added: ['d'], removed: ['a'] });
  });

  it('a defender reads only its own chunks of a map, unless it is the lowest defender (by number), which reads the whole map', () => {
    const info = { chambers: 1, weight: 1, capacity: 1 };
    const head = { defenderInfo: { 'defender-10': info, 'defender-2': info, 'defender-9': info } };
    // By number, not text: defender-10 sorts before defender-2 as a string.
    expect(lowestDefenderId(head.defenderInfo)).toBe('defender-2');
    expect(lowestDefenderId({})).toBeUndefined();
    expect(defenderMapScope('defender-2')(head)).toBeNull();
    expect(defenderMapScope('defender-10')(head)).toBe('defender-10');
    // Not in the map at all: it owns nothing and reads no chunk (its ID names none).
    expect(defenderMapScope('defender-0')({ defenderInfo: {} })).toBe('defender-0');
  });

  it('applying a diff to the previous set gives the next set (property)', () => {
    const keys = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'), { maxLength: 7 });
    fc.assert(
      fc.property(keys, keys, (prev, next) => {
        const { added, removed } = diffOwnership(prev, next);
        const result = new Set<string>(prev);
        removed.forEach((r) => result.delete(r));
        added.forEach((a) => result.add(a));
        return [...result].sort().join() === [...next].sort().join() && added.every((a) => !removed.includes(a));
      }),
      { seed: 7 },
    );
  });
});

describe('HeartbeatClock', () => {
  it('stamps a heartbeat when its revision changes, by the observer\'s clock', () => {
    const clock = new HeartbeatClock();
    expect(clock.observe([{ id: 'defender-0', revision: 1 }], 1000)).toEqual([{ id: 'defender-0', lastHeartbeatAt: 1000 }]);
    // Same revision later: not a new heartbeat.
    expect(clock.observe([{ id: 'defender-0', revision: 1 }], 5000)).toEqual([{ id: 'defender-0', lastHeartbeatAt: 1000 }]);
    expect(
      clock.observe(
        [
          { id: 'defender-0', revision: 9 },
          { id: 'defender-1', revision: 10 },
        ],
        7000,
      ),
    ).toEqual([
      { id: 'defender-0', lastHeartbeatAt: 7000 },
      { id: 'defender-1', lastHeartbeatAt: 7000 },
    ]);
    // defender-0's entry was deleted (graceful leave): it disappears.
    expect(clock.observe([{ id: 'defender-1', revision: 10 }], 8000)).toEqual([{ id: 'defender-1', lastHeartbeatAt: 7000 }]);
  });

  it('after a time the observer could not read the bucket, counts everyone in the next reading as seen then', () => {
    const clock = new HeartbeatClock();
    clock.observe([{ id: 'defender-0', revision: 1 }, { id: 'defender-1', revision: 2 }], 1000);
    // Reads failed from 1000 to 9000; defender-1's beat got through meanwhile, defender-0's did not.
    expect(clock.observe([{ id: 'defender-0', revision: 1 }, { id: 'defender-1', revision: 5 }], 9000, { afterBlindness: true })).toEqual([
      { id: 'defender-0', lastHeartbeatAt: 9000 },
      { id: 'defender-1', lastHeartbeatAt: 9000 },
    ]);
    // From then on, ageing as usual.
    expect(clock.observe([{ id: 'defender-0', revision: 1 }, { id: 'defender-1', revision: 6 }], 12000)).toEqual([
      { id: 'defender-0', lastHeartbeatAt: 9000 },
      { id: 'defender-1', lastHeartbeatAt: 12000 },
    ]);
  });
});

describe('DefenderLifecycle', () => {
  it('follows the seeds\' state machine and refuses illegal transitions', () => {
    let t = 0;
    const lc = new DefenderLifecycle(() => t);
    expect([lc.state, lc.code]).toEqual(['INITIALIZATION', 0]);
    t = 5;
    lc.to('CLAIMING_ID');
    lc.to('FOLLOWER');
    t = 9;
    lc.to('STABLE');
    lc.to('STABLE');
    expect([lc.state, lc.code, lc.entered('STABLE')]).toEqual(['STABLE', 3, 9]);
    expect(() => lc.to('CLAIMING_ID')).toThrow(IllegalTransitionError);
    lc.to('SHUTDOWN');
    expect(() => lc.to('STABLE')).toThrow('defender state SHUTDOWN -> STABLE is not allowed');
  });
});

describe('buildAssignmentMap', () => {
  it('computes per-defender info and the seeds\' statistics, and passes the map schema', () => {
    const m = buildAssignmentMap({
      version: 2,
      now: new Date('2026-11-25T10:00:00Z'),
      fencingToken: '3',
      controllerId: 'c1',
      trigger: 'planned_scale',
      state: 'STABLE',
      lifecycleState: 'stable',
      firstAssignmentAt: '2026-11-25T09:00:00.000Z',
      assignments: { 't:b': 'defender-1', 't:a': 'defender-0', 't:c': 'defender-1' },
      weights: { 't:a': 300, 't:b': 100, 't:c': 100 },
      defenders: [{ id: 'defender-1' }, { id: 'defender-0' }, { id: 'defender-2', capacity: 2 }],
    });
    expect(Object.keys(m.assignments)).toEqual(['t:a', 't:b', 't:c']);
    expect(m.defenderInfo).toEqual({
      'defender-0': { chambers: 1, weight: 300, capacity: 1 },
      'defender-1': { chambers: 2, weight: 200, capacity: 1 },
      'defender-2': { chambers: 0, weight: 0, capacity: 2 },
    });
    expect(m.statistics).toMatchObject({
      minChambersPerDefender: 0,
      maxChambersPerDefender: 2,
      avgChambersPerDefender: 1,
      minWeightPerDefender: 0,
      maxWeightPerDefender: 300,
    });
    const a = 500 / 3;
    const sd = Math.sqrt(((300 - a) ** 2 + (200 - a) ** 2 + (0 - a) ** 2) / 3);
    expect(m.statistics.weightVariancePercent).toBeCloseTo((sd / a) * 100, 10);
    expect(parseAssignmentMap(JSON.stringify(m))).toEqual(m);
  });
});

describe('ownerEpoch', () => {
  it('orders by map version first, then by claim generation, and stays a safe integer', () => {
    expect(ownerEpoch(5, 0)).toBeLessThan(ownerEpoch(5, 1));
    expect(ownerEpoch(5, 2 ** 21 - 1)).toBeLessThan(ownerEpoch(6, 0));
    expect(Number.isSafeInteger(ownerEpoch(2 ** 32 - 1, 2 ** 21 - 1))).toBe(true);
    expect(() => ownerEpoch(0, 0)).toThrow(RangeError);
    expect(() => ownerEpoch(1, 2 ** 21)).toThrow(/claim generation/);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 32 - 1 }),
        fc.integer({ min: 0, max: 2 ** 21 - 1 }),
        fc.integer({ min: 1, max: 2 ** 32 - 1 }),
        fc.integer({ min: 0, max: 2 ** 21 - 1 }),
        (v1, g1, v2, g2) => Math.sign(ownerEpoch(v1, g1) - ownerEpoch(v2, g2)) === Math.sign(v1 !== v2 ? v1 - v2 : g1 - g2),
      ),
      { seed: 11 },
    );
  });
});
