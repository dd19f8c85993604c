import { chamberKeySchema } from '@defender/contracts';
import { generateFab, MAX_WEIGHT, MIN_WEIGHT, svidNames, weightStats } from './fab';

describe('generateFab', () => {
  it('is deterministic for a seed and differs between seeds', () => {
    expect(generateFab({ tools: 30, seed: 7 })).toEqual(generateFab({ tools: 30, seed: 7 }));
    expect(generateFab({ tools: 30, seed: 8 }).chambers.map((c) => c.weight)).not.toEqual(generateFab({ tools: 30, seed: 7 }).chambers.map((c) => c.weight));
  });

  it.each([1, 4, 20, 100])('%i tools: 1-4 chambers each, valid keys, weight = svids x Hz x seconds in 30K..3.6M', (tools) => {
    const fab = generateFab({ tools, seed: 3 });
    expect(fab.tools).toHaveLength(tools);
    for (const t of fab.tools) {
      expect(t.chambers.length).toBeGreaterThanOrEqual(1);
      expect(t.chambers.length).toBeLessThanOrEqual(4);
    }
    expect(new Set(fab.chambers.map((c) => c.key)).size).toBe(fab.chambers.length);
    for (const c of fab.chambers) {
      expect(chamberKeySchema.safeParse(c.key).success).toBe(true);
      expect(c.weight).toBe(c.svidCount * c.collectionFreqHz * c.contextDurationSeconds);
      expect(c.weight).toBeGreaterThanOrEqual(MIN_WEIGHT);
      expect(c.weight).toBeLessThanOrEqual(MAX_WEIGHT);
      expect(c.contextDurationSeconds).toBeGreaterThanOrEqual(600);
      expect(c.contextDurationSeconds).toBeLessThanOrEqual(1800);
      expect(c.sensors.length).toBeGreaterThanOrEqual(2);
      expect(c.sensors.length).toBeLessThanOrEqual(4);
      const names = svidNames(c);
      expect(names).toHaveLength(c.svidCount);
      expect(new Set(names).size).toBe(c.svidCount);
      expect(c.recipe.steps.reduce((a, s) => a + s.fraction, 0)).toBeCloseTo(1, 9);
    }
  });

  it('has a realistic skew: a heavy tail of high-rate chambers carries a large share of the load', () => {
    const w = weightStats(generateFab({ tools: 500, seed: 1 }));
    expect(w.max / w.median).toBeGreaterThan(5);
    expect(w.top10Share).toBeGreaterThan(0.3);
    expect(w.min).toBeLessThan(100_000);
    expect(w.max).toBeGreaterThan(2_000_000);
  });

  it('rejects a fab without tools', () => {
    expect(() => generateFab({ tools: 0, seed: 1 })).toThrow(RangeError);
  });
});
