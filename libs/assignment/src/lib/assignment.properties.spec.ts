import fc from 'fast-check';
import {
  type AssignmentOptions,
  type AssignmentResult,
  type ChamberInput,
  computeAssignment,
  type DefenderInput,
  type PreviousAssignment,
} from '../index';
import { seededRandom } from '@defender/hashing';
import { fab, logUniformWeight, shuffle } from '../test/fab';

const SLACK = 1e-9;

/** Result without the (clock-dependent) duration, for equality checks. */
function comparable(r: AssignmentResult): string {
  return JSON.stringify({ ...r, stats: { ...r.stats, calculationDurationMs: 0 } });
}

function checkExactlyOnce(
  r: AssignmentResult,
  chambers: readonly ChamberInput[],
  live: readonly DefenderInput[],
) {
  const ids = new Set(live.map((d) => d.id));
  const keys = Object.keys(r.assignments);
  // (Sorted arrays rather than Sets: Jest compares Sets in quadratic time.)
  expect(keys.sort()).toEqual(chambers.map((c) => c.key).sort());
  expect(keys.filter((k) => !ids.has(r.assignments[k]!))).toEqual([]);
}

function orphanKeys(
  previous: PreviousAssignment,
  chambers: readonly ChamberInput[],
  live: readonly DefenderInput[],
) {
  const ids = new Set(live.map((d) => d.id));
  return chambers
    .map((c) => c.key)
    .filter((k) => previous.assignments[k] !== undefined && !ids.has(previous.assignments[k]!))
    .sort();
}

/** Arbitrary, small and coarse inputs: weights of any size (including 0), capacities, dead owners. */
const smallCase = fc
  .record({
    n: fc.integer({ min: 0, max: 120 }),
    m: fc.integer({ min: 1, max: 12 }),
    seed: fc.integer(),
    zeroShare: fc.double({ min: 0, max: 0.3, noNaN: true }),
    capacities: fc.boolean(),
    previousShare: fc.double({ min: 0, max: 1, noNaN: true }),
    mode: fc.constantFrom('balance' as const, 'orphans-only' as const),
    tolerance: fc.constantFrom(0, 0.01, 0.05, 0.2),
    cap: fc.boolean(),
    cooldown: fc.boolean(),
  })
  .map((c) => {
    const rnd = seededRandom(c.seed);
    const chambers: ChamberInput[] = Array.from({ length: c.n }, (_, i) => ({
      key: `tool${Math.floor(rnd() * 1000)}:chamber${i}`,
      weight: rnd() < c.zeroShare ? 0 : rnd() < 0.5 ? logUniformWeight(rnd()) : Math.floor(rnd() * 1000),
    }));
    const live: DefenderInput[] = Array.from({ length: c.m }, (_, i) => ({
      id: `defender-${i * 2}`,
      ...(c.capacities ? { capacity: [0.5, 1, 2, 3][Math.floor(rnd() * 4)] } : {}),
    }));
    const assignments: Record<string, string> = {};
    const lastMovedAt: Record<string, number> = {};
    for (const ch of chambers) {
      // Owners include dead ids (odd numbers), so some chambers are orphans.
      if (rnd() < c.previousShare) assignments[ch.key] = `defender-${Math.floor(rnd() * 2 * c.m)}`;
      if (rnd() < 0.5) lastMovedAt[ch.key] = 1_000_000 - Math.floor(rnd() * 100_000);
    }
    const options: AssignmentOptions = {
      mode: c.mode,
      tolerance: c.tolerance,
      now: 1_000_000,
      ...(c.cap ? { maxChambersPerDefender: Math.max(1, Math.ceil(c.n / c.m) + Math.floor(rnd() * 5)) } : {}),
      ...(c.cooldown ? { cooldownMs: 50_000 } : {}),
    };
    return { chambers, live, previous: { assignments, lastMovedAt }, options };
  });

describe('computeAssignment properties (arbitrary small inputs)', () => {
  it('is deterministic whatever the input order', () => {
    fc.assert(
      fc.property(smallCase, fc.integer(), ({ chambers, live, previous, options }, shuffleSeed) => {
        const a = computeAssignment(previous, chambers, live, options);
        const rnd = seededRandom(shuffleSeed);
        const reordered: PreviousAssignment = {
          assignments: Object.fromEntries(shuffle(Object.entries(previous.assignments), rnd)),
          lastMovedAt: Object.fromEntries(shuffle(Object.entries(previous.lastMovedAt), rnd)),
        };
        const b = computeAssignment(reordered, shuffle(chambers, rnd), shuffle(live, rnd), options);
        expect(comparable(b)).toBe(comparable(a));
      }),
      { seed: 4001, numRuns: 500 },
    );
  });

  it('assigns every chamber exactly once to a live defender, within the chamber cap', () => {
    fc.assert(
      fc.property(smallCase, ({ chambers, live, previous, options }) => {
        const r = computeAssignment(previous, chambers, live, options);
        checkExactlyOnce(r, chambers, live);
        if (options.maxChambersPerDefender !== undefined) {
          expect(r.stats.maxChambersPerDefender).toBeLessThanOrEqual(options.maxChambersPerDefender);
        }
      }),
      { seed: 4002, numRuns: 500 },
    );
  });

  it('balance mode never exceeds the bound max(1 + tol, 1 + w_max / share_min)', () => {
    fc.assert(
      fc.property(smallCase, ({ chambers, live, previous, options }) => {
        const r = computeAssignment(previous, chambers, live, {
          tolerance: options.tolerance,
          mode: 'balance',
        });
        expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(r.stats.balanceBound + SLACK);
      }),
      { seed: 4003, numRuns: 500 },
    );
  });

  it('orphans-only moves exactly the orphans (without a chamber cap)', () => {
    fc.assert(
      fc.property(smallCase, ({ chambers, live, previous, options }) => {
        const r = computeAssignment(previous, chambers, live, {
          ...options,
          maxChambersPerDefender: undefined,
          mode: 'orphans-only',
        });
        expect(r.moves.map((m) => m.key)).toEqual(orphanKeys(previous, chambers, live));
        expect(r.moves.every((m) => m.reason === 'orphaned')).toBe(true);
      }),
      { seed: 4004, numRuns: 500 },
    );
  });

  it('never moves a chamber in cooldown voluntarily', () => {
    fc.assert(
      fc.property(smallCase, ({ chambers, live, previous, options }) => {
        const opts = { ...options, cooldownMs: 50_000 };
        const r = computeAssignment(previous, chambers, live, opts);
        for (const move of r.moves) {
          const t = previous.lastMovedAt[move.key];
          const cooling = t !== undefined && opts.now! - t < opts.cooldownMs;
          if (cooling) expect(move.reason).not.toBe('rebalance');
          expect(r.lastMovedAt[move.key]).toBe(opts.now);
        }
      }),
      { seed: 4005, numRuns: 500 },
    );
  });

  it('a result inside the band is a fixed point: recomputing it moves nothing', () => {
    fc.assert(
      fc.property(smallCase, ({ chambers, live, options }) => {
        const opts = { tolerance: options.tolerance ?? 0.05 };
        const first = computeAssignment(null, chambers, live, opts);
        fc.pre(
          first.stats.maxLoadRatio <= 1 + opts.tolerance && first.stats.minLoadRatio >= 1 - opts.tolerance,
        );
        const again = computeAssignment({ assignments: first.assignments }, chambers, live, opts);
        expect(again.moves).toEqual([]);
      }),
      { seed: 4006, numRuns: 300 },
    );
  });
});

/**
 * Fab-like inputs: log-uniform weights 30 K-3.6 M, at least 50 chambers per defender (8,000 / 150
 * is 53) and equal capacities, where the band is reachable and the floor is a meaningful target.
 */
const fabCase = fc
  .record({
    m: fc.integer({ min: 2, max: 150 }),
    // Defenders after a topology change (scale target, or survivors + newcomers).
    to: fc.integer({ min: 1, max: 150 }),
    perDefender: fc.integer({ min: 50, max: 200 }),
    seed: fc.integer({ min: 0, max: 1_000_000 }),
    capacities: fc.boolean(),
  })
  .map(({ m, to, perDefender, seed, capacities }) => {
    const rnd = seededRandom(seed);
    const live: DefenderInput[] = Array.from({ length: m }, (_, i) => ({
      id: `defender-${i}`,
      ...(capacities ? { capacity: [1, 2, 3][Math.floor(rnd() * 3)] } : {}),
    }));
    // At least 50 chambers per defender before and after the change (150 x 50 = 7,500 <= 9,000).
    const most = Math.max(m, to);
    const n = most * Math.max(50, Math.min(perDefender, Math.floor(9000 / most)));
    return { chambers: fab(n, seed), live, to, rnd };
  });

function expectInBand(r: AssignmentResult) {
  expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(1.05 + SLACK);
  expect(r.stats.minLoadRatio).toBeGreaterThanOrEqual(0.95 - SLACK);
}

describe('computeAssignment properties (fab-like inputs)', () => {
  it('cold start is balanced within 1.05 (and above 0.95)', () => {
    fc.assert(
      fc.property(fabCase, ({ chambers, live }) => {
        const r = computeAssignment(null, chambers, live);
        checkExactlyOnce(r, chambers, live);
        expectInBand(r);
      }),
      { seed: 5001, numRuns: 60 },
    );
  });

  it('planned scale N -> M moves <= 1.10 x the floor and stays balanced', () => {
    fc.assert(
      fc.property(fabCase, ({ chambers, live, rnd, to }) => {
        fc.pre(to !== live.length);
        const before = computeAssignment(null, chambers, live);
        const next =
          to > live.length
            ? [
                ...live,
                ...Array.from({ length: to - live.length }, (_, i) => ({
                  id: `defender-${live.length + i}`,
                })),
              ]
            : shuffle(live, rnd).slice(0, to);
        const r = computeAssignment({ assignments: before.assignments }, chambers, next);
        checkExactlyOnce(r, chambers, next);
        expectInBand(r);
        expect(r.stats.floorWeight).toBeGreaterThan(0);
        expect(r.stats.movedWeight).toBeLessThanOrEqual(1.1 * r.stats.floorWeight);
      }),
      { seed: 5002, numRuns: 100 },
    );
  });

  it('random topology changes (defenders leave and join at once) stay balanced within 1.10 x the floor', () => {
    fc.assert(
      fc.property(fabCase, fc.integer({ min: 0, max: 10 }), ({ chambers, live, rnd, to }, leave) => {
        // Survivors plus newcomers make `to` defenders.
        fc.pre(leave < live.length && to >= live.length - leave && leave + to - live.length > 0);
        const join = to - (live.length - leave);
        const before = computeAssignment(null, chambers, live);
        const next = [
          ...shuffle(live, rnd).slice(leave),
          ...Array.from({ length: join }, (_, i) => ({ id: `defender-${1000 + i}` })),
        ];
        const r = computeAssignment({ assignments: before.assignments }, chambers, next);
        checkExactlyOnce(r, chambers, next);
        expectInBand(r);
        expect(r.stats.movedWeight).toBeLessThanOrEqual(1.1 * r.stats.floorWeight);
      }),
      { seed: 5003, numRuns: 100 },
    );
  });

  it('a crash moves exactly the orphans, spread within the list-scheduling bound', () => {
    fc.assert(
      fc.property(fabCase, fc.integer({ min: 1, max: 3 }), ({ chambers, live, rnd }, crashes) => {
        fc.pre(crashes < live.length);
        const before = computeAssignment(null, chambers, live);
        const survivors = shuffle(live, rnd).slice(crashes);
        const previous = { assignments: before.assignments };
        const r = computeAssignment(previous, chambers, survivors, { mode: 'orphans-only' });
        expect(r.moves.map((m) => m.key)).toEqual(orphanKeys(previous, chambers, survivors));
        expect(r.stats.movedWeight).toBe(r.stats.floorWeight);
        expect(r.stats.maxLoadRatio).toBeLessThanOrEqual(r.stats.balanceBound + SLACK);
      }),
      { seed: 5004, numRuns: 80 },
    );
  });

  it('a rolling update (same defenders) moves nothing', () => {
    fc.assert(
      fc.property(fabCase, ({ chambers, live, rnd }) => {
        const before = computeAssignment(null, chambers, live);
        const r = computeAssignment(
          { assignments: before.assignments },
          shuffle(chambers, rnd),
          shuffle(live, rnd),
        );
        expect(r.stats.chambersMoved).toBe(0);
        expect(r.assignments).toEqual(before.assignments);
      }),
      { seed: 5005, numRuns: 40 },
    );
  });
});
