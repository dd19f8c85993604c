import { chamberKeySchema } from '@defender/contracts';
import { generateFab, MAX_WEIGHT, MIN_WEIGHT, pmCycleOf, svidNames, TOOL_PROFILES, weightStats } from './fab';

describe('generateFab', () => {
  it('is deterministic for a seed and differs between seeds', () => {
    expect(generateFab({ tools: 12, seed: 7 })).toEqual(generateFab({ tools: 12, seed: 7 }));
    expect(generateFab({ tools: 30, seed: 8 }).chambers.map((c) => c.weight)).not.toEqual(generateFab({ tools: 30, seed: 7 }).chambers.map((c) => c.weight));
    expect(generateFab({ tools: 12, seed: 7, profile: 'detection' })).toEqual(generateFab({ tools: 12, seed: 7, profile: 'detection' }));
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

  it('keeps the default profile\'s chambers as they were (the whole-fab bench depends on them)', () => {
    // Seed 3, 4 tools, as generated before the realism was added: key, SVIDs, Hz, seconds, weight.
    const fab = generateFab({ tools: 4, seed: 3 });
    expect(fab.chambers.map((c) => [c.key, c.svidCount, c.collectionFreqHz, c.contextDurationSeconds, c.weight])).toEqual([
      ['ETCH01:PM1', 109, 5, 1020, 555900],
      ['ETCH01:PM2', 174, 5, 1140, 991800],
      ['IMPLANT01:PM1', 151, 1, 780, 117780],
      ['ETCH02:PM1', 132, 5, 1680, 1108800],
      ['ETCH02:PM2', 102, 10, 960, 979200],
      ['ETCH02:PM3', 180, 2, 1020, 367200],
      ['ETCH02:PM4', 141, 5, 1800, 1269000],
      ['WET01:PM1', 54, 1, 780, 42120],
      ['WET01:PM2', 59, 1, 960, 56640],
      ['WET01:PM3', 57, 1, 660, 37620],
      ['WET01:PM4', 54, 1, 1080, 58320],
    ]);
    const more = generateFab({ tools: 100, seed: 3 });
    expect(more.chambers).toHaveLength(225);
    expect(weightStats(more).total).toBe(113_102_340);
  });

  it('has a realistic skew: a heavy tail of high-rate chambers carries a large share of the load', () => {
    const w = weightStats(generateFab({ tools: 500, seed: 1 }));
    expect(w.max / w.median).toBeGreaterThan(5);
    expect(w.top10Share).toBeGreaterThan(0.3);
    expect(w.min).toBeLessThan(100_000);
    expect(w.max).toBeGreaterThan(2_000_000);
  });

  it('detection profile: the same tool types in small traces (1-2 Hz, 180-420 s, 3-5 sensors, 4-10 setpoints and states)', () => {
    const fab = generateFab({ tools: 40, seed: 5, profile: 'detection' });
    expect(new Set(fab.tools.map((t) => t.type))).toEqual(new Set(TOOL_PROFILES.map((p) => p.type)));
    for (const c of fab.chambers) {
      const templates = TOOL_PROFILES.find((p) => p.type === c.toolType)!.sensors.length;
      expect(c.profile).toBe('detection');
      expect([1, 2]).toContain(c.collectionFreqHz);
      expect(c.contextDurationSeconds).toBeGreaterThanOrEqual(180);
      expect(c.contextDurationSeconds).toBeLessThanOrEqual(420);
      expect(c.sensors.length).toBeGreaterThanOrEqual(3);
      expect(c.sensors.length).toBeLessThanOrEqual(Math.min(5, templates));
      expect(c.svidCount - c.sensors.length).toBeGreaterThanOrEqual(4);
      expect(c.svidCount - c.sensors.length).toBeLessThanOrEqual(10);
      expect(c.weight).toBe(c.svidCount * c.collectionFreqHz * c.contextDurationSeconds);
    }
    expect(new Set(fab.chambers.map((c) => c.sensors.length)).size).toBeGreaterThan(1);
  });

  it.each(['fab', 'detection'] as const)('%s profile: every recipe has a ramp step and an endpoint-controlled step', (profile) => {
    for (const c of generateFab({ tools: 40, seed: 2, profile }).chambers) {
      expect(c.recipe.steps.some((s) => s.ramp)).toBe(true);
      expect(c.recipe.steps.filter((s) => (s.durationSd ?? 0) > 0).map((s) => s.durationSd)).toEqual([0.02]);
    }
  });

  it.each(['fab', 'detection'] as const)('%s profile: PM cycles, a correlated pair, and each sensor\'s noise kind, glitches, ageing and wander in range', (profile) => {
    const fab = generateFab({ tools: 60, seed: 4, profile });
    const sensors = fab.chambers.flatMap((c) => c.sensors);
    for (const c of fab.chambers) {
      expect(c.pmIntervalRuns).toBeGreaterThanOrEqual(150);
      expect(c.pmIntervalRuns).toBeLessThanOrEqual(400);
      expect(c.pmOffsetRuns).toBeGreaterThanOrEqual(0);
      expect(c.pmOffsetRuns).toBeLessThan(c.pmIntervalRuns);
      if (c.sensors.length >= 2) {
        const [a, b] = c.correlatedPair!;
        expect(a).not.toBe(b);
        expect(c.sensors.map((s) => s.name)).toEqual(expect.arrayContaining([a, b]));
        expect(c.pairCorrelation).toBeGreaterThanOrEqual(0.85);
        expect(c.pairCorrelation).toBeLessThanOrEqual(0.95);
      } else {
        expect(c.correlatedPair).toBeUndefined();
      }
    }
    // Preferred pairs where the chamber has them (RF power and DC bias on an etcher).
    const etch = fab.chambers.find((c) => c.toolType === 'ETCH' && ['RFForwardPower', 'DCBias'].every((n) => c.sensors.some((s) => s.name === n)));
    expect(etch?.correlatedPair).toEqual(['RFForwardPower', 'DCBias']);
    const kinds = new Map<string, number>();
    for (const s of sensors) kinds.set(s.noiseKind, (kinds.get(s.noiseKind) ?? 0) + 1);
    expect([...kinds.keys()].sort()).toEqual(['gaussian', 'quantised', 'skewed']);
    for (const s of sensors) {
      if (s.noiseKind === 'quantised') {
        expect(s.resolution! / s.noiseSigma).toBeGreaterThanOrEqual(0.5);
        expect(s.resolution! / s.noiseSigma).toBeLessThanOrEqual(1);
      }
      if (s.noiseKind === 'skewed') expect(Math.abs(s.skew!)).toBeGreaterThanOrEqual(0.3);
      expect([0, 1 / 3000]).toContain(s.glitchRate);
      expect(Math.abs(s.ageingSigmas)).toBeGreaterThanOrEqual(0.5);
      expect(Math.abs(s.ageingSigmas)).toBeLessThanOrEqual(1.5);
      expect(s.wander).toHaveLength(2);
      expect(s.damping).toBeGreaterThan(0.5);
      expect(s.damping).toBeLessThan(0.95);
    }
    const glitchy = sensors.filter((s) => s.glitchRate > 0).length / sensors.length;
    expect(glitchy).toBeGreaterThan(0.2);
    expect(glitchy).toBeLessThan(0.6);
    expect(sensors.some((s) => s.ageingSigmas > 0) && sensors.some((s) => s.ageingSigmas < 0)).toBe(true);
  });

  it('pmCycleOf: runs since the last PM, a new cycle every pmIntervalRuns', () => {
    const ch = generateFab({ tools: 4, seed: 3 }).chambers[0]!;
    const first = pmCycleOf(ch, 0);
    expect(first.runInCycle).toBe(ch.pmOffsetRuns);
    const pm = ch.pmIntervalRuns - ch.pmOffsetRuns; // the first run after the first PM
    expect(pmCycleOf(ch, pm - 1)).toEqual({ cycle: first.cycle, runInCycle: ch.pmIntervalRuns - 1 });
    expect(pmCycleOf(ch, pm)).toEqual({ cycle: first.cycle + 1, runInCycle: 0 });
    expect(pmCycleOf(ch, pm + ch.pmIntervalRuns)).toEqual({ cycle: first.cycle + 2, runInCycle: 0 });
  });

  it('rejects a fab without tools', () => {
    expect(() => generateFab({ tools: 0, seed: 1 })).toThrow(RangeError);
  });
});
