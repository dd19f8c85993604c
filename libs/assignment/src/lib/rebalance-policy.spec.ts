import fc from 'fast-check';
import {
  balanceOf,
  computeAssignment,
  InvalidTriggerInputError,
  RebalancePolicy,
  type RebalancePolicyConfig,
} from '../index';
import { seededRandom } from '@defender/hashing';
import { defenders, fab, shuffle } from '../test/fab';

const CONFIG: RebalancePolicyConfig = { driftBand: 0.1, sustainMs: 60_000, cooldownMs: 120_000, settleMs: 20_000, tolerance: 0.05 };
const TICK = 2_000;
const inBand = { stable: true, maxRatio: 1.03, minRatio: 0.97 };
const drifted = { stable: true, maxRatio: 1.2, minRatio: 0.9 };

describe('RebalancePolicy (load drift)', () => {
  it('rebalances only after the load stayed outside the band for the sustain time', () => {
    const p = new RebalancePolicy(CONFIG);
    p.published(0, { orphansOnly: false });
    let t = CONFIG.cooldownMs;
    expect(p.observe(t, drifted).action).toBe('none');
    for (; t < CONFIG.cooldownMs + CONFIG.sustainMs - TICK; t += TICK) expect(p.observe(t, drifted).action).toBe('none');
    expect(p.observe(CONFIG.cooldownMs + CONFIG.sustainMs, drifted)).toEqual({ action: 'rebalance', reason: 'load_drift' });
  });

  it('a return inside the band restarts the sustain clock', () => {
    const p = new RebalancePolicy(CONFIG);
    expect(p.observe(0, drifted).action).toBe('none');
    expect(p.observe(50_000, inBand).action).toBe('none');
    expect(p.observe(52_000, drifted).action).toBe('none');
    expect(p.observe(100_000, drifted).action).toBe('none');
    expect(p.observe(112_000, drifted).action).toBe('rebalance');
  });

  it('respects the cooldown after any balance map', () => {
    const p = new RebalancePolicy(CONFIG);
    p.published(0, { orphansOnly: false });
    expect(p.observe(10_000, drifted).action).toBe('none');
    expect(p.observe(80_000, drifted).action).toBe('none'); // sustained, but inside the cooldown
    expect(p.observe(120_000, drifted).action).toBe('rebalance');
  });

  it('a pending membership change resets the clocks', () => {
    const p = new RebalancePolicy(CONFIG);
    expect(p.observe(0, drifted).action).toBe('none');
    expect(p.observe(30_000, { ...drifted, stable: false }).action).toBe('none');
    expect(p.observe(62_000, drifted).action).toBe('none');
    expect(p.observe(122_000, drifted).action).toBe('rebalance');
  });

  it('noise that stays inside the drift band, or leaves it briefly, never rebalances (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ noise: fc.double({ min: -0.1, max: 0.1, noNaN: true }), spike: fc.boolean() }), { minLength: 1, maxLength: 400 }),
        (steps) => {
          const p = new RebalancePolicy(CONFIG);
          let t = 0;
          let spikeRun = 0;
          for (const s of steps) {
            // A spike outside the band lasts less than the sustain time, then the load is back inside.
            const spike = s.spike && spikeRun < CONFIG.sustainMs / TICK - 1;
            spikeRun = spike ? spikeRun + 1 : 0;
            const max = spike ? 1.3 : 1 + Math.abs(s.noise);
            const min = 1 - Math.abs(s.noise);
            expect(p.observe(t, { stable: true, maxRatio: max, minRatio: min }).action).toBe('none');
            t += TICK;
          }
        },
      ),
      { seed: 8201, numRuns: 300 },
    );
  });

  it('sustained drift rebalances at most once per cooldown (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 50, max: 600 }), (ticks) => {
        const p = new RebalancePolicy(CONFIG);
        const at: number[] = [];
        for (let k = 0; k < ticks; k++) {
          const t = k * TICK;
          if (p.observe(t, drifted).action === 'rebalance') {
            at.push(t);
            p.published(t, { orphansOnly: false });
          }
        }
        for (let k = 1; k < at.length; k++) expect(at[k]! - at[k - 1]!).toBeGreaterThanOrEqual(CONFIG.cooldownMs);
        expect(at.length).toBeGreaterThan(0);
      }),
      { seed: 8202, numRuns: 100 },
    );
  });

  it('rejects a configuration out of range', () => {
    expect(() => new RebalancePolicy({ driftBand: 0.02, tolerance: 0.05 })).toThrow(InvalidTriggerInputError);
    expect(() => new RebalancePolicy({ sustainMs: -1 })).toThrow(/sustainMs/);
  });
});

describe('RebalancePolicy (after a crash)', () => {
  it('one balance pass once stable for the settle time, if outside the ±tolerance band', () => {
    const p = new RebalancePolicy(CONFIG);
    p.published(0, { orphansOnly: true });
    expect(p.postCrashPending).toBe(true);
    const off = { stable: true, maxRatio: 1.07, minRatio: 0.98 };
    expect(p.observe(2_000, off).action).toBe('none');
    expect(p.observe(10_000, { ...off, stable: false }).action).toBe('none'); // a join pending: wait again
    expect(p.observe(12_000, off).action).toBe('none');
    expect(p.observe(32_000, off)).toEqual({ action: 'rebalance', reason: 'post_crash' });
    expect(p.postCrashPending).toBe(false);
    expect(p.observe(34_000, off).action).toBe('none'); // once: 1.07 is inside the drift band
  });

  it('a pending post-crash pass has precedence over load drift', () => {
    const p = new RebalancePolicy({ ...CONFIG, sustainMs: 1_000, cooldownMs: 0, settleMs: 20_000 });
    p.published(0, { orphansOnly: true });
    for (let t = 0; t < 20_000; t += TICK) expect(p.observe(t, drifted).action).toBe('none');
    expect(p.observe(20_000, drifted)).toEqual({ action: 'rebalance', reason: 'post_crash' });
  });

  it('no pass when the orphans-only placement stayed inside the band', () => {
    const p = new RebalancePolicy(CONFIG);
    p.published(0, { orphansOnly: true });
    expect(p.observe(0, inBand).action).toBe('none');
    expect(p.observe(20_000, inBand).action).toBe('none');
    expect(p.postCrashPending).toBe(false);
  });

  it('crash, orphans-only, then the post-crash pass restores ±5 % on fab-like inputs (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 40 }), fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 1, max: 2 }), (m, seed, crashes) => {
        const chambers = fab(m * 60, seed);
        const live = defenders(m);
        const before = computeAssignment(null, chambers, live);
        const survivors = shuffle(live, seededRandom(seed)).slice(crashes);
        const orphaned = computeAssignment({ assignments: before.assignments }, chambers, survivors, { mode: 'orphans-only' });
        const p = new RebalancePolicy(CONFIG);
        p.published(0, { orphansOnly: true });
        const b = balanceOf(orphaned.assignments, chambers, survivors);
        p.observe(0, { stable: true, maxRatio: b.maxRatio, minRatio: b.minRatio });
        const advice = p.observe(CONFIG.settleMs, { stable: true, maxRatio: b.maxRatio, minRatio: b.minRatio });
        const outside = b.maxRatio > 1.05 || b.minRatio < 0.95;
        expect(advice.action).toBe(outside ? 'rebalance' : 'none');
        const after = outside ? computeAssignment({ assignments: orphaned.assignments }, chambers, survivors) : orphaned;
        expect(after.stats.maxLoadRatio).toBeLessThanOrEqual(1.05 + 1e-9);
        expect(after.stats.minLoadRatio).toBeGreaterThanOrEqual(0.95 - 1e-9);
      }),
      { seed: 8203, numRuns: 60 },
    );
  });
});
