import {
  type AssignmentResult,
  type ChamberInput,
  computeAssignment,
  type DefenderInput,
  DuplicateChamberError,
  DuplicateDefenderError,
  InfeasibleAssignmentError,
  InvalidAssignmentInputError,
  NoDefendersError,
} from '../index';
import { seededRandom } from '@defender/hashing';
import { defenders, fab, loads, shuffle } from '../test/fab';

const TOL = 1e-9;

function expectEveryChamberOnce(
  r: AssignmentResult,
  chambers: readonly ChamberInput[],
  live: readonly DefenderInput[],
) {
  const ids = new Set(live.map((d) => d.id));
  expect(Object.keys(r.assignments)).toEqual(chambers.map((c) => c.key).sort());
  for (const owner of Object.values(r.assignments)) expect(ids.has(owner)).toBe(true);
}

function orphanKeys(previous: Record<string, string>, live: readonly DefenderInput[]): string[] {
  const ids = new Set(live.map((d) => d.id));
  return Object.keys(previous)
    .filter((k) => !ids.has(previous[k]!))
    .sort();
}

describe('computeAssignment (sticky-balanced, the default)', () => {
  const chambers = fab(5000, 1);
  const cold = computeAssignment(null, chambers, defenders(30));

  it('cold start 5,000 / 30: every chamber once, max/avg <= 1.05 and min/avg >= 0.95', () => {
    expectEveryChamberOnce(cold, chambers, defenders(30));
    expect(cold.stats.strategy).toBe('sticky-balanced');
    expect(cold.stats.maxLoadRatio).toBeLessThanOrEqual(1.05);
    expect(cold.stats.minLoadRatio).toBeGreaterThanOrEqual(0.95);
    expect(cold.stats.maxToAvgWeight).toBeCloseTo(cold.stats.maxLoadRatio, 12);
    expect(cold.stats).toMatchObject({
      chambersMoved: 0,
      chambersPlaced: 5000,
      movedWeight: 0,
      floorWeight: 0,
    });
    expect(cold.moves).toEqual([]);
  });

  it('rolling update (same defenders): moves nothing', () => {
    const r = computeAssignment(
      { assignments: cold.assignments },
      chambers,
      shuffle(defenders(30), seededRandom(5)),
    );
    expect(r.assignments).toEqual(cold.assignments);
    expect(r.stats).toMatchObject({ chambersMoved: 0, movedWeight: 0, chambersPlaced: 0 });
  });

  it.each([
    [30, 45],
    [45, 30],
    [30, 31],
    [30, 60],
    [60, 20],
  ])('planned scale %i -> %i: moves <= 1.10 x the floor and stays balanced', (from, to) => {
    const before = computeAssignment(null, chambers, defenders(from));
    const live = defenders(to);
    const r = computeAssignment({ assignments: before.assignments }, chambers, live);
    expectEveryChamberOnce(r, chambers, live);
    // The floor is (M-N)/M of the total when growing, (N-M)/N when shrinking (up to the previous
    // map's own +-0.1 % imbalance).
    const expectedFloor = to > from ? (to - from) / to : (from - to) / from;
    expect(r.stats.floorFraction).toBeCloseTo(expectedFloor, 2);
    expect(r.stats.movedWeight).toBeLessThanOrEqual(1.1 * r.stats.floorWeight);
    expect(r.stats.movedWeightFraction).toBeCloseTo(r.stats.movedWeight / r.stats.totalWeight, 12);
    expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(1.05);
    expect(r.stats.minLoadRatio).toBeGreaterThanOrEqual(0.95);
    const gone = new Set(defenders(from).map((d) => d.id));
    for (const d of live) gone.delete(d.id);
    for (const m of r.moves) expect(m.reason).toBe(gone.has(m.from) ? 'orphaned' : 'rebalance');
  });

  it("crash (orphans-only): moves exactly the crashed defender's chambers and stays balanced", () => {
    const live = defenders(30).filter((d) => d.id !== 'defender-7');
    const r = computeAssignment({ assignments: cold.assignments }, chambers, live, { mode: 'orphans-only' });
    expectEveryChamberOnce(r, chambers, live);
    const orphans = orphanKeys(cold.assignments, live);
    expect(orphans.length).toBeGreaterThan(0);
    expect(r.moves.map((m) => m.key)).toEqual(orphans);
    expect(r.moves.every((m) => m.reason === 'orphaned' && m.from === 'defender-7')).toBe(true);
    expect(r.stats.movedWeight).toBe(r.stats.floorWeight);
    expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(1.05);
  });

  it('crash at 8,000 / 150 (orphans-only): orphans go largest first to the least-loaded survivor', () => {
    const big = fab(8000, 2);
    const before = computeAssignment(null, big, defenders(150));
    const live = defenders(150).filter((d) => d.id !== 'defender-42');
    const r = computeAssignment({ assignments: before.assignments }, big, live, { mode: 'orphans-only' });
    const orphans = orphanKeys(before.assignments, live);
    expect(r.moves.map((m) => m.key)).toEqual(orphans);

    // Independent replay of the rule: survivors keep their chambers; orphans by weight descending
    // (ties by key) each go to the survivor with the least weight (ties: fewer chambers, then id).
    const weightOf = new Map(big.map((c) => [c.key, c.weight]));
    const load = new Map(live.map((d) => [d.id, 0]));
    const count = new Map(live.map((d) => [d.id, 0]));
    for (const c of big) {
      const owner = before.assignments[c.key]!;
      if (load.has(owner)) {
        load.set(owner, load.get(owner)! + c.weight);
        count.set(owner, count.get(owner)! + 1);
      }
    }
    const ids = live.map((d) => d.id).sort();
    const order = [...orphans].sort((a, b) => weightOf.get(b)! - weightOf.get(a)! || (a < b ? -1 : 1));
    for (const key of order) {
      const target = ids.reduce((best, id) =>
        load.get(id)! < load.get(best)! ||
        (load.get(id) === load.get(best) && count.get(id)! < count.get(best)!)
          ? id
          : best,
      );
      expect(r.assignments[key]).toBe(target);
      load.set(target, load.get(target)! + weightOf.get(key)!);
      count.set(target, count.get(target)! + 1);
    }

    // Moving only orphans, 1.05 can be out of reach at 53 chambers per defender (a 3.6 M orphan is
    // larger than any survivor's headroom); the list-scheduling bound always holds.
    expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(r.stats.balanceBound);
    const heaviest = Math.max(...big.map((c) => c.weight));
    expect(r.stats.balanceBound).toBeCloseTo(1 + heaviest / r.stats.avgWeightPerDefender, 12);
  });

  it('crash with a pending join (balance mode): orphans fill the newcomer first, little else moves', () => {
    const live = [...defenders(30).filter((d) => d.id !== 'defender-3'), { id: 'defender-30' }];
    const r = computeAssignment({ assignments: cold.assignments }, chambers, live);
    expectEveryChamberOnce(r, chambers, live);
    const orphans = new Set(orphanKeys(cold.assignments, live));
    for (const key of orphans) expect(r.assignments[key]).not.toBe('defender-3');
    expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(1.05);
    expect(r.stats.minLoadRatio).toBeGreaterThanOrEqual(0.95);
    expect(r.stats.movedWeight).toBeLessThanOrEqual(1.1 * r.stats.floorWeight);
  });

  it('8,000 chambers / 150 defenders: balanced, every chamber once', () => {
    const big = fab(8000, 3);
    const r = computeAssignment(null, big, defenders(150));
    expectEveryChamberOnce(r, big, defenders(150));
    expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(1.05);
    expect(r.stats.minLoadRatio).toBeGreaterThanOrEqual(0.95);
    expect(r.stats.chamberCount).toBe(8000);
    expect(r.stats.defenderCount).toBe(150);
  });

  it('balances by capacity share', () => {
    const live: DefenderInput[] = [
      { id: 'defender-0', capacity: 1 },
      { id: 'defender-1', capacity: 2 },
      { id: 'defender-2', capacity: 3 },
      { id: 'defender-3', capacity: 2 },
    ];
    const r = computeAssignment(null, chambers, live);
    const w = loads(r.assignments, chambers);
    const total = chambers.reduce((s, c) => s + c.weight, 0);
    for (const d of live) {
      const share = (total * d.capacity!) / 8;
      expect(w.get(d.id)! / share).toBeLessThanOrEqual(1.05 + TOL);
      expect(w.get(d.id)! / share).toBeGreaterThanOrEqual(0.95 - TOL);
    }
    expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(1.05);
  });

  it('tolerance sets the band', () => {
    const tight = computeAssignment(null, chambers, defenders(30), { tolerance: 0.01 });
    expect(tight.stats.maxLoadRatio).toBeLessThanOrEqual(1.01);
    expect(tight.stats.minLoadRatio).toBeGreaterThanOrEqual(0.99);
    const loose = computeAssignment({ assignments: cold.assignments }, chambers, defenders(31), {
      tolerance: 0.2,
    });
    // A newcomer at 0 is below any band, so it is filled to share x (1 - tol/2).
    expect(loose.stats.minLoadRatio).toBeGreaterThanOrEqual(0.8);
    expect(loose.stats.movedWeight).toBeLessThan(loose.stats.floorWeight);
  });

  describe('maxChambersPerDefender', () => {
    it('is never exceeded', () => {
      const r = computeAssignment(null, chambers, defenders(30), { maxChambersPerDefender: 170 });
      expect(r.stats.maxChambersPerDefender).toBeLessThanOrEqual(170);
      expectEveryChamberOnce(r, chambers, defenders(30));
    });

    it('lowering it moves the lightest chambers off the defenders above it (reason chamber-cap)', () => {
      // A previous map where defender-0 holds 40 extra chambers.
      const crowded = { ...cold.assignments };
      Object.keys(crowded)
        .filter((k) => crowded[k] !== 'defender-0')
        .slice(0, 40)
        .forEach((k) => (crowded[k] = 'defender-0'));
      const held = Object.keys(crowded).filter((k) => crowded[k] === 'defender-0');
      const cap = 175;
      const r = computeAssignment({ assignments: crowded }, chambers, defenders(30), {
        maxChambersPerDefender: cap,
        mode: 'orphans-only',
      });
      expect(r.stats.maxChambersPerDefender).toBeLessThanOrEqual(cap);
      expect(r.moves).toHaveLength(held.length - cap);
      expect(r.moves.every((m) => m.reason === 'chamber-cap' && m.from === 'defender-0')).toBe(true);
      const weightOf = new Map(chambers.map((c) => [c.key, c.weight]));
      const lightest = held
        .sort((a, b) => weightOf.get(a)! - weightOf.get(b)! || (a < b ? -1 : 1))
        .slice(0, held.length - cap)
        .sort();
      expect(r.moves.map((m) => m.key)).toEqual(lightest);
    });

    it('throws InfeasibleAssignmentError when chambers exceed the cap x defenders', () => {
      expect(() => computeAssignment(null, chambers, defenders(30), { maxChambersPerDefender: 166 })).toThrow(
        InfeasibleAssignmentError,
      );
    });
  });

  describe('cooldown', () => {
    const now = 1_700_000_000_000;
    const previous = {
      assignments: cold.assignments,
      lastMovedAt: Object.fromEntries(chambers.map((c) => [c.key, now - 60_000])),
    };

    it('skips voluntary moves of chambers moved within the cooldown', () => {
      const r = computeAssignment(previous, chambers, defenders(45), { cooldownMs: 300_000, now });
      expect(r.stats.chambersInCooldown).toBe(5000);
      expect(r.moves).toEqual([]);
      // The newcomers stay empty: stability wins over balance until the cooldown ends.
      expect(r.stats.minWeightPerDefender).toBe(0);
      const later = computeAssignment(previous, chambers, defenders(45), {
        cooldownMs: 300_000,
        now: now + 240_001,
      });
      expect(later.stats.chambersInCooldown).toBe(0);
      expect(later.stats.maxLoadRatio).toBeLessThanOrEqual(1.05);
      expect(later.stats.movedWeight).toBeLessThanOrEqual(1.1 * later.stats.floorWeight);
    });

    it('does not hold back orphans (crash moves ignore the cooldown)', () => {
      const live = defenders(30).filter((d) => d.id !== 'defender-9');
      const r = computeAssignment(previous, chambers, live, {
        cooldownMs: 300_000,
        now,
        mode: 'orphans-only',
      });
      expect(r.moves.map((m) => m.key)).toEqual(orphanKeys(cold.assignments, live));
    });

    it('stamps moves with now, carries stamps still in cooldown, drops expired ones', () => {
      const stamps = { 'tool0000:chamber1': now - 10_000, 'tool0000:chamber2': now - 400_000 };
      const live = defenders(30).filter((d) => d.id !== 'defender-9');
      const r = computeAssignment({ assignments: cold.assignments, lastMovedAt: stamps }, chambers, live, {
        cooldownMs: 300_000,
        now,
        mode: 'orphans-only',
      });
      const expected: Record<string, number> = Object.fromEntries(r.moves.map((m) => [m.key, now]));
      if (!r.moves.some((m) => m.key === 'tool0000:chamber1')) expected['tool0000:chamber1'] = now - 10_000;
      expect(r.lastMovedAt).toEqual(expected);
    });

    it('requires now when a cooldown is set', () => {
      expect(() => computeAssignment(null, chambers, defenders(3), { cooldownMs: 1000 })).toThrow(
        InvalidAssignmentInputError,
      );
    });
  });

  it('reports the compute time and its two phases from the injected clock only', () => {
    let t = 100;
    const readings: number[] = [];
    const r = computeAssignment(null, chambers, defenders(30), { clock: () => (readings.push((t += 2.5)), t) });
    // From the first reading to the last; each phase is a sum of spans between readings inside it.
    expect(r.stats.calculationDurationMs).toBe(readings.at(-1)! - readings[0]!);
    expect(r.stats.phase1DurationMs).toBeGreaterThan(0);
    expect(r.stats.phase2DurationMs).toBeGreaterThan(0);
    expect(r.stats.phase1DurationMs + r.stats.phase2DurationMs).toBeLessThanOrEqual(r.stats.calculationDurationMs);
    expect(cold.stats).toMatchObject({ calculationDurationMs: 0, phase1DurationMs: 0, phase2DurationMs: 0 });
    // A crash map only places: no phase 2, no rebalancing rounds.
    const crash = computeAssignment({ assignments: r.assignments }, chambers, defenders(29), { clock: () => (t += 2.5), mode: 'orphans-only' });
    expect(crash.stats).toMatchObject({ phase2DurationMs: 0, rebalanceIterations: 0 });
    expect(crash.stats.phase1DurationMs).toBeGreaterThan(0);
  });

  it('counts the rounds of weight rebalancing (seed 000: defender_weight_rebalance_iterations)', () => {
    // Same defenders, already balanced: nothing to rebalance.
    expect(computeAssignment({ assignments: cold.assignments }, chambers, defenders(30)).stats.rebalanceIterations).toBe(0);
    // One more defender: the others shed to it.
    const grown = computeAssignment({ assignments: cold.assignments }, chambers, defenders(31));
    expect(grown.stats.chambersMoved).toBeGreaterThan(0);
    expect(grown.stats.rebalanceIterations).toBeGreaterThan(0);
  });

  it('ignores previous entries of chambers that no longer exist and treats unknown owners as orphans', () => {
    const few = chambers.slice(0, 50);
    const previous = { assignments: { ...cold.assignments, 'gone:chamber1': 'defender-1' } };
    const r = computeAssignment(previous, few, defenders(30));
    expectEveryChamberOnce(r, few, defenders(30));
    expect(r.assignments['gone:chamber1']).toBeUndefined();
  });
});

describe('computeAssignment edge cases', () => {
  it('no defenders: throws NoDefendersError when there are chambers, empty result otherwise', () => {
    expect(() => computeAssignment(null, fab(3, 1), [])).toThrow(NoDefendersError);
    const r = computeAssignment(null, [], []);
    expect(r.assignments).toEqual({});
    expect(r.stats).toMatchObject({
      defenderCount: 0,
      chamberCount: 0,
      maxLoadRatio: 1,
      minWeightPerDefender: 0,
    });
  });

  it('one defender takes everything', () => {
    const chambers = fab(100, 4);
    const r = computeAssignment(null, chambers, defenders(1));
    expect(new Set(Object.values(r.assignments))).toEqual(new Set(['defender-0']));
    expect(r.stats.maxLoadRatio).toBeCloseTo(1, 12);
  });

  it('no chambers: empty map, zero loads', () => {
    const r = computeAssignment({ assignments: { 'a:1': 'defender-0' } }, [], defenders(3));
    expect(r.assignments).toEqual({});
    expect(r.stats).toMatchObject({
      totalWeight: 0,
      maxWeightPerDefender: 0,
      chambersMoved: 0,
      maxToAvgWeight: 1,
    });
  });

  it('zero-weight chambers are assigned and spread by count', () => {
    const zeros = Array.from({ length: 10 }, (_, i) => ({ key: `z${i}:c`, weight: 0 }));
    const r = computeAssignment(null, zeros, defenders(3));
    expect([...countBy(r.assignments).values()].sort()).toEqual([3, 3, 4]);
    expect(r.stats.maxLoadRatio).toBe(1);
    const mixed = [...fab(300, 5), ...zeros];
    const m = computeAssignment(null, mixed, defenders(3));
    expectEveryChamberOnce(m, mixed, defenders(3));
    expect(m.stats.maxLoadRatio).toBeLessThanOrEqual(1.05);
  });

  it('rejects duplicate chamber keys, listing them', () => {
    const chambers = [
      ...fab(5, 1),
      { key: 'tool0000:chamber2', weight: 5 },
      { key: 'tool0001:chamber1', weight: 9 },
    ];
    let error: unknown;
    try {
      computeAssignment(null, chambers, defenders(2));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DuplicateChamberError);
    expect(error).toBeInstanceOf(InvalidAssignmentInputError);
    expect((error as DuplicateChamberError).keys).toEqual(['tool0000:chamber2', 'tool0001:chamber1']);
    expect((error as Error).name).toBe('DuplicateChamberError');
    expect((error as Error).message).toContain('tool0000:chamber2');
  });

  it('rejects duplicate defender ids', () => {
    expect(() => computeAssignment(null, fab(5, 1), [{ id: 'defender-1' }, { id: 'defender-1' }])).toThrow(
      DuplicateDefenderError,
    );
  });

  it('reports every malformed value at once', () => {
    let error: InvalidAssignmentInputError | undefined;
    try {
      computeAssignment(
        null,
        [
          { key: 'a:1', weight: -1 },
          { key: 'a:2', weight: Number.NaN },
          { key: '', weight: 1 },
          { key: 'a:3', weight: Number.POSITIVE_INFINITY },
        ],
        [{ id: 'defender-0', capacity: 0 }],
        { tolerance: 1.5, maxChambersPerDefender: 0.5 },
      );
    } catch (e) {
      error = e as InvalidAssignmentInputError;
    }
    expect(error).toBeInstanceOf(InvalidAssignmentInputError);
    expect(error!.problems).toHaveLength(7);
  });

  it('a chamber heavier than the average load gets a defender of its own; the bound it forces', () => {
    const chambers = [{ key: 'heavy:1', weight: 100_000_000 }, ...fab(99, 6)];
    const r = computeAssignment(null, chambers, defenders(10));
    const owner = r.assignments['heavy:1']!;
    expect(Object.values(r.assignments).filter((d) => d === owner)).toHaveLength(1);
    // max/avg is exactly heavy/avg: the lower bound any assignment has (a chamber is not split).
    expect(r.stats.maxWeightPerDefender).toBe(100_000_000);
    const avg = r.stats.avgWeightPerDefender;
    expect(r.stats.maxToAvgWeight).toBeCloseTo(100_000_000 / avg, 12);
    expect(r.stats.balanceBound).toBeCloseTo(1 + 100_000_000 / avg, 12);
    expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(r.stats.balanceBound);
  });

  it('granularity can force more than 1.05 without a heavy chamber: m + 1 equal chambers on m defenders', () => {
    const chambers = Array.from({ length: 5 }, (_, i) => ({ key: `c${i}:1`, weight: 10 }));
    const r = computeAssignment(null, chambers, defenders(4));
    // Optimal: one defender holds two chambers, max/avg = 20 / 12.5 = 1.6 <= bound 1 + 10 / 12.5.
    expect(r.stats.maxLoadRatio).toBeCloseTo(1.6, 12);
    expect(r.stats.balanceBound).toBeCloseTo(1.8, 12);
  });

  it('gives the same result whatever the input order', () => {
    const chambers = fab(2000, 8);
    const previous = computeAssignment(null, chambers, defenders(20));
    const live = [...defenders(17), ...defenders(5, 40)];
    const a = computeAssignment({ assignments: previous.assignments }, chambers, live);
    const rnd = seededRandom(99);
    const shuffledPrevious = Object.fromEntries(shuffle(Object.entries(previous.assignments), rnd));
    const b = computeAssignment(
      { assignments: shuffledPrevious },
      shuffle(chambers, rnd),
      shuffle(live, rnd),
    );
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
  });
});

function countBy(assignments: Record<string, string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const d of Object.values(assignments)) out.set(d, (out.get(d) ?? 0) + 1);
  return out;
}
