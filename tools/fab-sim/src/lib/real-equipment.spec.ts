import { effectsFor, EXCURSION_SHAPES, planExcursions, REAL_EQUIPMENT_KINDS } from './excursions';
import { generateFab, type ChamberSpec } from './fab';
import { detectionMetrics, type RunOutcome } from './detection-metrics';
import { normalCdf, oracleBound, profileLine, profileMetrics, shiftsPerRun } from './oracle';
import { equipmentEvents, eventLevelSigmas, EVENT_HORIZON_RUNS, runStartSeconds, type ChamberEvent } from './real-equipment';
import { synthesizeTrace } from './trace';
import type { Excursion } from './excursions';

// The real-equipment profile (issue 49, item 1): lattice sensors, equipment events, production
// periods, closed-loop groups. Fixed seeds, exact comparisons where the model is exact.
const SEED = 20261127;
const fab = generateFab({ tools: 8, seed: SEED, profile: 'real-equipment' });

function meanOf(a: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] as number;
  return s / a.length;
}

function run(ch: ChamberSpec, runIndex: number, effects?: ReturnType<typeof effectsFor>) {
  return synthesizeTrace(ch, { runId: `r${runIndex}`, runIndex, startSeconds: 0, ...(effects ? { effects } : {}) });
}

/** The same chamber without one of its events. */
function without(ch: ChamberSpec, e: ChamberEvent): ChamberSpec {
  const equipment = ch.equipment;
  if (!equipment) throw new Error('no equipment');
  return { ...ch, equipment: { ...equipment, events: equipment.events.filter((x) => x !== e) } };
}

describe('real-equipment profile', () => {
  it('is the detection fab of the same seed plus its additions', () => {
    const det = generateFab({ tools: 8, seed: SEED, profile: 'detection' });
    expect(fab.chambers.map((c) => c.key)).toEqual(det.chambers.map((c) => c.key));
    fab.chambers.forEach((c, i) => {
      const d = det.chambers[i] as ChamberSpec;
      expect(d.equipment).toBeUndefined();
      expect(c.recipe).toEqual(d.recipe);
      expect(c.sensors.slice(0, d.sensors.length).map((s) => s.name)).toEqual(d.sensors.map((s) => s.name));
      // Ageing doubled (1-3 run sds over a PM cycle instead of 0.5-1.5).
      c.sensors.slice(0, d.sensors.length).forEach((s, k) => expect(s.ageingSigmas).toBeCloseTo(2 * (d.sensors[k]?.ageingSigmas ?? 0), 6));
      expect(c.svidCount).toBe(d.svidCount + c.sensors.length - d.sensors.length);
    });
  });

  it('reads its lattice sensors on their lattice: whole counts 99-102, 0 or 1, a state of levels 0-4', () => {
    const seen = { gauge: new Set<number>(), reflected: new Set<number>(), stage: new Set<number>() };
    for (const ch of fab.chambers.slice(0, 4)) {
      for (const r of [0, 17, 140, 301]) {
        const t = run(ch, r);
        for (const v of t.svids.get('ForelinePressure') ?? []) seen.gauge.add(v);
        for (const v of t.svids.get('ReflectedPower') ?? []) seen.reflected.add(v);
        for (const v of t.svids.get('HeaterZoneStage') ?? []) seen.stage.add(v);
      }
    }
    for (const v of seen.gauge) expect(Number.isInteger(v)).toBe(true);
    // A handful of counts around 100 (events move the baseline by a count or so).
    expect(seen.gauge.size).toBeLessThanOrEqual(9);
    expect(Math.min(...seen.gauge)).toBeGreaterThanOrEqual(95);
    expect(Math.max(...seen.gauge)).toBeLessThanOrEqual(106);
    expect([...seen.reflected].sort()).toEqual([0, 1]);
    for (const v of seen.stage) expect([0, 1, 2, 3, 4]).toContain(v);
    expect(seen.stage.size).toBeGreaterThan(1);
  });

  it('plans PMs at the PM-cycle boundaries, cleans, part changes and production periods, in run order', () => {
    for (const ch of fab.chambers) {
      const events = ch.equipment?.events ?? [];
      const runs = events.map((e) => e.beforeRun);
      expect(runs).toEqual([...runs].sort((a, b) => a - b));
      expect(Math.max(...runs)).toBeLessThan(EVENT_HORIZON_RUNS);
      for (const e of events.filter((x) => x.kind === 'pm')) expect((e.beforeRun + ch.pmOffsetRuns) % ch.pmIntervalRuns).toBe(0);
      expect(new Set(events.map((e) => e.kind))).toEqual(new Set(['pm', 'clean', 'part-change', 'long-idle']));
    }
    const listed = equipmentEvents(fab.chambers, 330);
    expect(listed.length).toBeGreaterThan(fab.chambers.length);
    for (const e of listed) expect(e.beforeRun).toBeLessThan(330);
    expect(Object.keys(listed[0] ?? {}).sort()).toEqual(['beforeRun', 'chamber', 'kind']);
  });

  it('shifts the named sensors of an event together by the stated sds, and no other sensor', () => {
    let checked = 0;
    for (const ch of fab.chambers.slice(0, 6)) {
      for (const e of (ch.equipment?.events ?? []).filter((x) => x.kind !== 'long-idle' && x.beforeRun < 400)) {
        const named = Object.keys(e.shifts);
        expect(named.length).toBeGreaterThanOrEqual(2);
        for (const v of Object.values(e.shifts)) {
          expect(Math.abs(v)).toBeGreaterThanOrEqual(1);
          expect(Math.abs(v)).toBeLessThanOrEqual(3);
        }
        const withIt = run(ch, e.beforeRun);
        const withoutIt = run(without(ch, e), e.beforeRun);
        for (const s of ch.sensors) {
          const a = withIt.svids.get(s.name) as Float32Array;
          const b = withoutIt.svids.get(s.name) as Float32Array;
          const moved = meanOf(a) - meanOf(b);
          const stated = (e.shifts[s.name] ?? 0) * s.runSigma;
          if (s.noiseKind === 'quantised') {
            // On a lattice the move is the stated shift rounded sample by sample: within half a count.
            expect(Math.abs(moved - stated)).toBeLessThanOrEqual(0.5 * (s.resolution ?? 1) + 1e-9);
          } else {
            expect(moved).toBeCloseTo(stated, Math.max(0, 3 - Math.ceil(Math.log10(Math.abs(meanOf(a)) + 1))));
          }
          if (!(s.name in e.shifts)) expect(Array.from(a)).toEqual(Array.from(b));
        }
        expect(eventLevelSigmas(ch, named[0] as string, e.beforeRun) - eventLevelSigmas(ch, named[0] as string, e.beforeRun - 1)).toBeCloseTo(
          Object.values(ch.equipment?.events ?? [])
            .filter((x) => x.beforeRun === e.beforeRun)
            .reduce((acc, x) => acc + (x.shifts[named[0] as string] ?? 0), 0),
          9,
        );
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('gives each production period its own means, weeks after the last, and never moves a held or state sensor', () => {
    for (const ch of fab.chambers.slice(0, 6)) {
      const idle = (ch.equipment?.events ?? []).filter((e) => e.kind === 'long-idle');
      expect(idle.length).toBeGreaterThanOrEqual(4);
      const movable = ch.sensors.filter((s) => s.role !== 'held' && s.role !== 'state').map((s) => s.name);
      for (const e of idle) {
        expect(Object.keys(e.shifts).sort()).toEqual([...movable].sort());
        expect(Object.values(e.shifts).some((v) => v !== 0)).toBe(true);
        expect(e.idleSeconds ?? 0).toBeGreaterThanOrEqual(7 * 86_400);
        const spacing = 300;
        expect(runStartSeconds(ch, e.beforeRun, 0, spacing) - runStartSeconds(ch, e.beforeRun - 1, 0, spacing)).toBe(spacing + (e.idleSeconds ?? 0));
      }
      // Period means are 0.5-1.5 sds from nominal: the accumulated period shifts say so.
      for (const n of movable) {
        let level = 0;
        for (const e of idle) {
          level += e.shifts[n] ?? 0;
          expect(Math.abs(level)).toBeGreaterThanOrEqual(0.5 - 1e-9);
          expect(Math.abs(level)).toBeLessThanOrEqual(1.5 + 1e-9);
        }
      }
      for (const s of ch.sensors.filter((x) => x.role === 'held' || x.role === 'state')) {
        for (const e of ch.equipment?.events ?? []) expect(e.shifts[s.name]).toBeUndefined();
      }
    }
  });

  describe('closed-loop faults', () => {
    const xs = planExcursions(fab, { count: 6, kinds: ['closed-loop'], sizes: [2, 3], afterRun: 45, runsPerChamber: 200, seed: 7, runsRange: [5, 8] });

    it('are planned on the reacting sensors with the held sensor named, lengths in the range', () => {
      expect(xs.length).toBe(6);
      for (const x of xs) {
        const ch = fab.chambers.find((c) => c.key === x.chamber) as ChamberSpec;
        const loop = ch.equipment?.loops[0];
        expect(x.held).toBe(loop?.held);
        expect([x.svid, ...(x.coupled ?? []).map(([n]) => n)]).toEqual(loop?.reacting);
        expect(x.endRun - x.startRun + 1).toBeGreaterThanOrEqual(5);
        expect(x.endRun - x.startRun + 1).toBeLessThanOrEqual(8);
      }
    });

    it('leave the held sensor as it was while the reacting sensors move together, by the stated sds', () => {
      for (const x of xs) {
        const ch = fab.chambers.find((c) => c.key === x.chamber) as ChamberSpec;
        const moves: number[] = [];
        for (let r = x.startRun; r <= x.endRun; r++) {
          const faulty = run(ch, r, effectsFor([x], r));
          const good = run(ch, r);
          expect(Array.from(faulty.svids.get(x.held as string) ?? [])).toEqual(Array.from(good.svids.get(x.held as string) ?? []));
          moves.push(meanOf(faulty.svids.get(x.svid) as Float32Array) - meanOf(good.svids.get(x.svid) as Float32Array));
          for (const [n, per] of x.coupled ?? []) {
            const d = meanOf(faulty.svids.get(n) as Float32Array) - meanOf(good.svids.get(n) as Float32Array);
            expect(d).toBeCloseTo(x.magnitude * per, 2);
          }
        }
        // The primary's run mean moves by size x its in-control sd (the calibration's target), every run.
        const sd = x.target.sd as number;
        for (const m of moves) expect(Math.abs(m / sd - (x.direction ?? 1) * x.size)).toBeLessThan(0.1 * x.size);
      }
    });

    it('move the reacting sensors along a direction other than their in-control correlation', () => {
      for (const ch of fab.chambers) {
        const loop = ch.equipment?.loops[0];
        if (!loop) continue;
        const a = loop.inControl;
        const g = loop.faultGains;
        const cos = a.reduce((s, v, i) => s + v * (g[i] ?? 0), 0) / Math.hypot(...a) / Math.hypot(...g);
        expect(Math.abs(cos)).toBeLessThan(0.9999);
      }
      // In control the reacting sensors' run means correlate through the loop's common factor.
      const ch = fab.chambers.find((c) => (c.equipment?.loops[0]?.reacting.length ?? 0) >= 2) as ChamberSpec;
      const [p, q] = ch.equipment?.loops[0]?.reacting ?? [];
      const xsP: number[] = [];
      const xsQ: number[] = [];
      // Inside one period and PM cycle: run-level draws only (events and ageing are slow).
      for (let r = 1000; r < 1080; r++) {
        const t = run(ch, r);
        xsP.push(meanOf(t.svids.get(p as string) as Float32Array));
        xsQ.push(meanOf(t.svids.get(q as string) as Float32Array));
      }
      const mp = meanOf(xsP);
      const mq = meanOf(xsQ);
      const cov = xsP.reduce((s, v, i) => s + (v - mp) * ((xsQ[i] as number) - mq), 0);
      const corr = cov / Math.sqrt(xsP.reduce((s, v) => s + (v - mp) ** 2, 0) * xsQ.reduce((s, v) => s + (v - mq) ** 2, 0));
      expect(Math.abs(corr)).toBeGreaterThan(0.2);
    });
  });

  it('plans excursion lengths from runsRange without touching the kinds\' own lengths otherwise', () => {
    const det = generateFab({ tools: 4, seed: SEED, profile: 'detection' });
    const opts = { count: 8, sizes: [1, 2], afterRun: 45, runsPerChamber: 200, seed: 3 };
    const a = planExcursions(det, opts);
    const b = planExcursions(det, opts);
    expect(b).toEqual(a);
    for (const x of a) expect(x.endRun - x.startRun + 1).toBe(EXCURSION_SHAPES[x.kind].runs);
    const ranged = planExcursions(fab, { ...opts, kinds: REAL_EQUIPMENT_KINDS, runsRange: [1, 10] });
    for (const x of ranged) {
      expect(x.endRun - x.startRun + 1).toBeGreaterThanOrEqual(1);
      expect(x.endRun - x.startRun + 1).toBeLessThanOrEqual(10);
    }
  });
});

describe('oracle bound', () => {
  const excursion = (kind: Excursion['kind'], size: number, runs: number): Excursion =>
    ({ kind, size, startRun: 50, endRun: 50 + runs - 1 }) as unknown as Excursion;

  it('is the normal distribution function where it is known', () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 6);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
    expect(normalCdf(-2.326348)).toBeCloseTo(0.01, 6);
  });

  it('is 1 - (1 - Phi(d - z))^L for a shift of d sds over L runs at alpha = 1/370', () => {
    // z(1 - 1/370) = 2.7818.
    const z = 2.78183;
    for (const [d, L] of [
      [1, 1],
      [2, 5],
      [4, 10],
    ] as const) {
      expect(oracleBound(excursion('mean-shift', d, L))).toBeCloseTo(1 - (1 - normalCdf(d - z)) ** L, 4);
    }
    // At d = z one run is a coin toss.
    expect(oracleBound(excursion('mean-shift', 2.78183, 1))).toBeCloseTo(0.5, 4);
  });

  it('ramps a drift to its size', () => {
    expect(shiftsPerRun(excursion('drift', 3, 3))).toEqual([1, 2, 3]);
    expect(oracleBound(excursion('drift', 3, 3))).toBeLessThan(oracleBound(excursion('mean-shift', 3, 3)));
  });

  it('counts sustained and closed-loop detections, runs after events and the chance detections of each chamber', () => {
    const x = (id: string, chamber: string, kind: Excursion['kind'], size: number, start: number, runs: number): Excursion =>
      ({ id, chamber, kind, size, startRun: start, endRun: start + runs - 1 }) as unknown as Excursion;
    const xs = [x('a', 'T:1', 'closed-loop', 2, 50, 5), x('b', 'T:1', 'mean-shift', 3, 80, 2), x('c', 'T:2', 'drift', 2, 50, 6)];
    const outcomes: RunOutcome[] = [];
    for (const chamber of ['T:1', 'T:2']) {
      for (let r = 0; r < 120; r++) {
        // T:1 alarms on every tenth run (5, 15, ...) and on the closed-loop fault's third run; T:2 never.
        const alarmed = chamber === 'T:1' && (r === 52 || r % 10 === 5);
        outcomes.push({ chamber, runIndex: r, judged: r >= 30, alarmed, held: false });
      }
    }
    const base = detectionMetrics(outcomes, xs);
    const p = profileMetrics(base, outcomes, [{ chamber: 'T:1', beforeRun: 100, kind: 'clean' }], 0);
    expect(p.sustained).toEqual({ injected: 2, detected: 1, rate: 0.5, delayP90: 2 });
    expect(p.closedLoop).toEqual({ injected: 1, detected: 1, rate: 1 });
    // Runs 100-119 of T:1, alarms at 105 and 115.
    expect(p.afterEvents).toEqual({ runs: 20, alarms: 2, rate: 0.1 });
    const expected = xs.reduce((a, e) => a + oracleBound(e), 0);
    expect(p.oracle.expected).toBeCloseTo(expected, 12);
    expect(p.oracle.efficiency).toBeCloseTo(base.all.detected / expected, 12);
    const f = base.perChamber.worst;
    expect(p.oracle.chance).toBeCloseTo(1 - (1 - f) ** 5 + 1 - (1 - f) ** 2, 12);
    expect(profileLine('real-equipment', 'default', base, p)).toMatch(/ sustained-2sigma 50\.0% .* closed-loop 100\.0% regime-alarms 0 delay-p90 2 runs$/);
  });
});
