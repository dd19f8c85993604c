import fc from 'fast-check';
import { type ChamberInput, computeAssignment } from '../index';
import { defenders, fab, loads } from '../test/fab';

/** Chambers per defender id. */
function counts(assignments: Record<string, string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const owner of Object.values(assignments)) out.set(owner, (out.get(owner) ?? 0) + 1);
  return out;
}

/** The chambers `to` received from `from` (present in both maps, another owner now). */
function moved(from: Record<string, string>, to: Record<string, string>): string[] {
  return Object.keys(to).filter((k) => from[k] !== undefined && from[k] !== to[k]);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

describe('shedding gives up chambers of every size (issue 23: CPU and memory follow the weight)', () => {
  it('a defender back after a crash of one of two gets half the chambers, not the heaviest third', () => {
    // The whole-fab replay's case: one defender held every chamber after the other's crash; the
    // other comes back. Shedding heaviest first gave it 1,383 of 5,000 chambers for half the weight.
    const chambers = fab(5000, 7);
    const alone = computeAssignment(null, chambers, defenders(1));
    const back = computeAssignment({ assignments: alone.assignments }, chambers, defenders(2));
    const w = loads(back.assignments, chambers);
    const c = counts(back.assignments);
    const total = back.stats.totalWeight;
    for (const id of ['defender-0', 'defender-1']) {
      expect(Math.abs((w.get(id) ?? 0) / (total / 2) - 1)).toBeLessThanOrEqual(0.05);
      expect(Math.abs((c.get(id) ?? 0) / 2500 - 1)).toBeLessThanOrEqual(0.05);
    }
    // The moved chambers look like the fab: their median weight within 15 % of the fab's.
    const byKey = new Map(chambers.map((ch) => [ch.key, ch.weight]));
    const movedWeights = moved(alone.assignments, back.assignments).map((k) => byKey.get(k)!);
    expect(Math.abs(median(movedWeights) / median(chambers.map((ch) => ch.weight)) - 1)).toBeLessThanOrEqual(0.15);
    // Still at the movement floor by weight (half of it).
    expect(back.stats.movedWeight).toBeLessThanOrEqual(1.1 * back.stats.floorWeight);
  });

  it('planned scale-up moves about the same share of the chambers as of the weight (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 100_000 }),
        (m, add, seed) => {
          const n = (m + add) * 150;
          const chambers: ChamberInput[] = fab(n, seed);
          const before = computeAssignment(null, chambers, defenders(m));
          const after = computeAssignment({ assignments: before.assignments }, chambers, defenders(m + add));
          const movedKeys = moved(before.assignments, after.assignments);
          const countShare = movedKeys.length / n;
          const weightShare = after.stats.movedWeight / after.stats.totalWeight;
          // The newcomers' count share follows their weight share (heaviest first moved about a
          // third as many chambers as this for the same weight).
          expect(countShare).toBeGreaterThanOrEqual(0.75 * weightShare);
          expect(countShare).toBeLessThanOrEqual(1.25 * weightShare);
          expect(after.stats.movedWeight).toBeLessThanOrEqual(1.1 * after.stats.floorWeight + 1e-9);
        },
      ),
      { numRuns: 40, seed: 23 },
    );
  });
});
