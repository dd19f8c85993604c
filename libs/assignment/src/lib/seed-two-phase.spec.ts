import { HashRing } from '@defender/hashing';
import { computeAssignment, InvalidAssignmentInputError } from '../index';
import { defenders, fab } from '../test/fab';

describe('computeAssignment (seed-two-phase baseline)', () => {
  const chambers = fab(5000, 1);
  const ring = new HashRing();
  const live = defenders(30);
  const result = computeAssignment(null, chambers, live, { strategy: 'seed-two-phase', ring });

  it('phase 1 is the ring; phase 2 only moves chambers off defenders above avg x 1.2', () => {
    const ringLoads = new Map<string, number>();
    for (const c of chambers) {
      const owner = ring.ownerOfKey(c.key);
      ringLoads.set(owner, (ringLoads.get(owner) ?? 0) + c.weight);
    }
    const avg = Math.floor(chambers.reduce((s, c) => s + c.weight, 0) / 30);
    let moved = 0;
    for (const c of chambers) {
      const onRing = ring.ownerOfKey(c.key);
      if (result.assignments[c.key] !== onRing) {
        moved++;
        expect(ringLoads.get(onRing)!).toBeGreaterThan(Math.floor((avg * 12) / 10));
        expect(ringLoads.get(result.assignments[c.key]!)!).toBeLessThan(Math.floor((avg * 8) / 10));
      }
    }
    expect(moved).toBeGreaterThan(0);
    expect(result.stats.strategy).toBe('seed-two-phase');
    // Phase 2 moved something: it ran at least one of its at most 5 iterations.
    expect(result.stats.rebalanceIterations).toBeGreaterThanOrEqual(1);
    expect(result.stats.rebalanceIterations).toBeLessThanOrEqual(5);
  });

  it('times its two phases with the injected clock (ring, then rebalancing)', () => {
    let t = 0;
    const timed = computeAssignment(null, chambers, live, { strategy: 'seed-two-phase', ring, clock: () => (t += 1) });
    expect(timed.stats.phase1DurationMs).toBeGreaterThan(0);
    expect(timed.stats.phase2DurationMs).toBeGreaterThan(0);
    expect(timed.stats.phase1DurationMs + timed.stats.phase2DurationMs).toBeLessThanOrEqual(timed.stats.calculationDurationMs);
  });

  it("reaches the seeds' +-20 % at 5,000 / 30", () => {
    expect(result.stats.maxLoadRatio).toBeLessThanOrEqual(1.2);
    expect(result.stats.minLoadRatio).toBeGreaterThanOrEqual(0.8);
  });

  it('ignores the previous map (a rolling update recomputes the same ring result)', () => {
    const again = computeAssignment({ assignments: result.assignments }, chambers, live, {
      strategy: 'seed-two-phase',
    });
    expect(again.assignments).toEqual(result.assignments);
    expect(again.stats.chambersMoved).toBe(0);
  });

  it("orphans-only is the seed's emergency path: orphans to their ring owner among survivors", () => {
    const survivors = live.filter((d) => d.id !== 'defender-4');
    const r = computeAssignment({ assignments: result.assignments }, chambers, survivors, {
      strategy: 'seed-two-phase',
      mode: 'orphans-only',
    });
    const survivorRing = new HashRing();
    survivorRing.setNodes(survivors.map((d) => d.id));
    for (const c of chambers) {
      if (result.assignments[c.key] === 'defender-4')
        expect(r.assignments[c.key]).toBe(survivorRing.ownerOfKey(c.key));
      else expect(r.assignments[c.key]).toBe(result.assignments[c.key]);
    }
  });

  it('uses the given ring, so only new defenders are hashed', () => {
    computeAssignment(null, chambers, defenders(31), { strategy: 'seed-two-phase', ring });
    expect(ring.nodes).toHaveLength(31);
    expect(ring.setNodes(defenders(30).map((d) => d.id)).hashed).toEqual([]);
  });

  it('rejects the rendez options it does not implement', () => {
    const opts = { strategy: 'seed-two-phase' as const };
    expect(() => computeAssignment(null, chambers, [{ id: 'd', capacity: 2 }], opts)).toThrow(
      InvalidAssignmentInputError,
    );
    expect(() => computeAssignment(null, chambers, live, { ...opts, maxChambersPerDefender: 500 })).toThrow(
      InvalidAssignmentInputError,
    );
    expect(() => computeAssignment(null, chambers, live, { ...opts, cooldownMs: 5, now: 1 })).toThrow(
      InvalidAssignmentInputError,
    );
  });
});
