import fc from 'fast-check';
import { balanceOf, type ChamberInput, computeAssignment } from '../index';
import { defenders, fab, loads } from '../test/fab';

const SLACK = 1e-9;

/** The fab plus `giants` chambers each heavier than the average defender load. */
function withGiants(n: number, seed: number, m: number, giants: number, factor: number): { chambers: ChamberInput[]; giantKeys: string[] } {
  const base = fab(n, seed);
  const total = base.reduce((a, c) => a + c.weight, 0);
  const giantKeys = Array.from({ length: giants }, (_, g) => `giant${g}:1`);
  const chambers = [...base, ...giantKeys.map((key, g) => ({ key, weight: Math.round((total / m) * (factor + g * 0.25)) }))];
  return { chambers, giantKeys };
}

function expectGiantsAlone(assignments: Record<string, string>, chambers: readonly ChamberInput[], giantKeys: string[], live: number) {
  const weights = loads(assignments, chambers);
  const owners = giantKeys.map((k) => assignments[k]!);
  expect(new Set(owners).size).toBe(giantKeys.length);
  const b = balanceOf(assignments, chambers, defenders(live));
  for (const [id, load] of Object.entries(b.load)) {
    // Every defender within ±5 % of its target: the giant alone (plus at most 5 % of it), the rest even.
    expect(load).toBeLessThanOrEqual(b.target[id]! * 1.05 + SLACK);
    expect(load).toBeGreaterThanOrEqual(b.target[id]! * 0.95 - SLACK);
    expect(weights.get(id) ?? 0).toBeCloseTo(load, 3);
  }
}

describe('a chamber heavier than the average defender load', () => {
  it('scaling 10 -> 11 gives the new defender load; the giant keeps its own defender', () => {
    const { chambers, giantKeys } = withGiants(400, 11, 10, 1, 3);
    const ten = computeAssignment(null, chambers, defenders(10));
    expectGiantsAlone(ten.assignments, chambers, giantKeys, 10);
    const eleven = computeAssignment({ assignments: ten.assignments }, chambers, defenders(11));
    expect(eleven.assignments[giantKeys[0]!]).toBe(ten.assignments[giantKeys[0]!]);
    const newcomer = loads(eleven.assignments, chambers).get('defender-10') ?? 0;
    const rest = (eleven.stats.totalWeight - chambers.find((c) => c.key === giantKeys[0])!.weight) / 10;
    expect(newcomer).toBeGreaterThanOrEqual(0.95 * rest);
    expectGiantsAlone(eleven.assignments, chambers, giantKeys, 11);
    // Moved load is the floor's order: the newcomer's share of the rest.
    expect(eleven.stats.floorWeight).toBeGreaterThan(0);
    expect(eleven.stats.movedWeight).toBeLessThanOrEqual(1.1 * eleven.stats.floorWeight);
  });

  it('cold start, scale and crash keep giants alone and the rest within ±5 % of an even split (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 4, max: 30 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 1, max: 2 }),
        fc.double({ min: 1.2, max: 4, noNaN: true }),
        fc.integer({ min: -2, max: 3 }),
        (m, seed, giants, factor, delta) => {
          const { chambers, giantKeys } = withGiants(m * 60, seed, m, giants, factor);
          const first = computeAssignment(null, chambers, defenders(m));
          expectGiantsAlone(first.assignments, chambers, giantKeys, m);
          const to = Math.max(giants + 1, m + delta);
          const next = computeAssignment({ assignments: first.assignments }, chambers, defenders(to));
          expectGiantsAlone(next.assignments, chambers, giantKeys, to);
          // A fixed point: recomputing moves nothing.
          const again = computeAssignment({ assignments: next.assignments }, chambers, defenders(to));
          expect(again.moves).toEqual([]);
        },
      ),
      { seed: 8301, numRuns: 60 },
    );
  });
});
