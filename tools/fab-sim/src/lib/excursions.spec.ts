import type { TraceRecord } from '@defender/contracts';
import { createTrace, IndicatorCalculator, type StatisticName } from '@defender/uchart';
import { effectsFor, EXCURSION_KINDS, EXCURSION_SHAPES, MIN_GAP_RUNS, parseKinds, parseSizes, planExcursions, type Excursion } from './excursions';
import { generateFab, slowLevelSigmas, type ChamberSpec, type FabSpec } from './fab';
import { synthesizeTrace } from './trace';

const calc = new IndicatorCalculator();

/** A statistic of one SVID over a step (or the whole run), as the product computes it. */
function statistic(t: TraceRecord, svid: string, step: string | undefined, stat: StatisticName): number {
  const trace = createTrace({ runId: t.runId, timing: t.timing, svids: t.svids, steps: t.steps });
  const [o] = calc.compute(trace, [{ svid, window: step === undefined ? { kind: 'context' } : { kind: 'step', step }, statistic: stat }]);
  if (o?.kind !== 'point') throw new Error(`no ${stat} of ${svid} in ${step ?? 'the context'}`);
  return o.value;
}

/**
 * The excursion's target statistic of a run; with `fixedAge` the slow ageing and wander of the run
 * are taken out (they only add a constant to a run's level, so they move mean, max and min alike).
 */
function targetValue(ch: ChamberSpec, x: Excursion, t: TraceRecord, runIndex: number, fixedAge: boolean): number {
  const slow = (svid: string) => {
    const k = ch.sensors.findIndex((s) => s.name === svid);
    return fixedAge ? ch.sensors[k]!.runSigma * slowLevelSigmas(ch, k, runIndex) : 0;
  };
  const { svid, svid2, step } = x.target;
  if (x.target.statistic === 'mean-difference') {
    const [s1, s2] = x.target.scale!;
    return (statistic(t, svid, step, 'mean') - slow(svid)) / s1 - (statistic(t, svid2!, step, 'mean') - slow(svid2!)) / s2;
  }
  const stat = x.target.statistic as StatisticName;
  return statistic(t, svid, step, stat) - (stat === 'mean' || stat === 'max' || stat === 'min' ? slow(svid) : 0);
}

const synth = (ch: ChamberSpec, runIndex: number, xs: readonly Excursion[] = []) =>
  synthesizeTrace(ch, { runId: `r${runIndex}`, runIndex, startSeconds: 1_700_000_000 + runIndex * 600, effects: effectsFor(xs, runIndex) });

/** `x` as if its last run were `runIndex` (the full effect, a drift at its end). */
const at = (x: Excursion, runIndex: number): Excursion => ({ ...x, startRun: runIndex - (x.endRun - x.startRun), endRun: runIndex });

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function sd(xs: readonly number[]): number {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1));
}

const chamberOf = (fab: FabSpec, x: Excursion) => fab.chambers.find((c) => c.key === x.chamber)!;

describe('planExcursions', () => {
  const fab = generateFab({ tools: 20, seed: 2, profile: 'detection' });

  it('cycles kinds and sizes independently so every (kind, size) pair occurs, one excursion per chamber, inside the runs', () => {
    const xs = planExcursions(fab, { count: 33, afterRun: 25, runsPerChamber: 80, seed: 2 });
    expect(xs).toHaveLength(33);
    expect(new Set(xs.map((x) => x.chamber)).size).toBe(33);
    expect(xs.slice(0, 11).map((x) => x.kind)).toEqual([...EXCURSION_KINDS]);
    expect(xs.slice(0, 4).map((x) => x.size)).toEqual([1, 2, 3, 1]);
    expect(new Set(xs.map((x) => `${x.kind} ${x.size}`)).size).toBe(33);
    for (const x of xs) {
      const ch = chamberOf(fab, x);
      expect(x.startRun).toBeGreaterThanOrEqual(25);
      expect(x.endRun).toBeLessThan(80);
      expect(x.endRun - x.startRun + 1).toBe(EXCURSION_SHAPES[x.kind].runs);
      expect(ch.sensors.map((s) => s.name)).toContain(x.svid);
      expect(x.target.svid).toBe(x.svid);
      expect(x.target.sd).toBeGreaterThan(0);
      expect(Number.isFinite(x.magnitude) && x.magnitude !== 0).toBe(true);
      expect(x.description.length).toBeGreaterThan(20);
      if (EXCURSION_SHAPES[x.kind].window === 'step') {
        expect(ch.recipe.steps.map((s) => s.name)).toContain(x.step);
        expect(x.target.step).toBe(x.step);
      } else {
        expect(x.step).toBeUndefined();
      }
      if (x.kind === 'correlated-pair') {
        expect([x.svid, x.svid2].sort()).toEqual([...ch.correlatedPair!].sort());
        expect(x.target).toMatchObject({ svid2: x.svid2, statistic: 'mean-difference' });
      } else {
        expect(x.target.statistic).toBe(x.kind === 'spike' || x.kind === 'overshoot' ? (x.direction! > 0 ? 'max' : 'min') : EXCURSION_SHAPES[x.kind].statistic);
      }
      if (x.kind === 'long-step') expect(ch.recipe.steps.find((s) => s.name === x.step)!.durationSd).toBeGreaterThan(0);
      if (x.kind === 'ramp-slope') expect(ch.recipe.steps.find((s) => s.name === x.step)!.ramp).toBe(true);
    }
  });

  it('pairs every kind with every size even when their counts share a factor', () => {
    const kinds = ['mean-shift', 'drift', 'spike', 'step-mean-shift'] as const;
    const xs = planExcursions(fab, { count: 8, kinds, sizes: [1, 2], afterRun: 25, runsPerChamber: 60, seed: 3 });
    expect(new Set(xs.map((x) => `${x.kind} ${x.size}`)).size).toBe(8);
  });

  it('is deterministic for its options', () => {
    const opts = { count: 6, afterRun: 25, runsPerChamber: 60, seed: 9 };
    expect(planExcursions(fab, opts)).toEqual(planExcursions(fab, opts));
  });

  it('puts several excursions on a chamber with maxPerChamber, apart by at least 15 runs, every chamber once before any twice', () => {
    const small: FabSpec = { ...fab, chambers: fab.chambers.slice(5, 11) };
    const xs = planExcursions(small, { count: 18, kinds: ['mean-shift', 'spike', 'long-step'], afterRun: 20, runsPerChamber: 200, seed: 4, maxPerChamber: 3 });
    expect(xs).toHaveLength(18);
    expect(new Set(xs.slice(0, 6).map((x) => x.chamber)).size).toBe(6);
    for (const c of small.chambers) {
      const own = xs.filter((x) => x.chamber === c.key).sort((a, b) => a.startRun - b.startRun);
      expect(own).toHaveLength(3);
      for (let i = 1; i < own.length; i++) expect(own[i]!.startRun - own[i - 1]!.endRun - 1).toBeGreaterThanOrEqual(MIN_GAP_RUNS);
    }
  });

  it('plans fewer when the runs or chambers leave no room, and only the kinds asked for', () => {
    expect(planExcursions(fab, { count: 4, kinds: ['spike', 'variance-burst', 'mean-shift'], afterRun: 25, runsPerChamber: 30, seed: 1 }).map((x) => x.kind)).toEqual(['spike', 'variance-burst', 'spike', 'variance-burst']);
    expect(planExcursions(fab, { count: 4, afterRun: 25, runsPerChamber: 25, seed: 1 })).toEqual([]);
    expect(planExcursions(fab, { count: 3, kinds: ['drift'], afterRun: 20, runsPerChamber: 40, seed: 1 }).every((x) => x.kind === 'drift')).toBe(true);
    const two: FabSpec = { ...fab, chambers: fab.chambers.slice(0, 2) };
    expect(planExcursions(two, { count: 5, kinds: ['mean-shift'], afterRun: 20, runsPerChamber: 40, seed: 1 })).toHaveLength(2);
  });

  it('rejects sizes that are not positive', () => {
    expect(() => planExcursions(fab, { count: 1, sizes: [0], afterRun: 20, runsPerChamber: 40, seed: 1 })).toThrow(RangeError);
  });
});

describe('excursion sizes', () => {
  // One excursion of each kind, size 2, on a detection-profile fab.
  const fab = generateFab({ tools: 16, seed: 9, profile: 'detection' });
  const plan = planExcursions(fab, { count: EXCURSION_KINDS.length, sizes: [2], afterRun: 25, runsPerChamber: 120, seed: 4 });
  const PAIRS = 40;
  const FIRST = 500;

  it('plans one of each kind', () => {
    expect(plan.map((x) => x.kind)).toEqual([...EXCURSION_KINDS]);
  });

  it.each(EXCURSION_KINDS)('%s moves its target statistic by size x sd (paired runs), sd being the in-control run-to-run spread at a fixed age', (kind) => {
    const x = plan.find((e) => e.kind === kind)!;
    const ch = chamberOf(fab, x);
    const changes: number[] = [];
    const inControl: number[] = [];
    for (let r = FIRST; r < FIRST + 2 * PAIRS; r++) {
      const base = synth(ch, r);
      inControl.push(targetValue(ch, x, base, r, true));
      if (r < FIRST + PAIRS) changes.push(targetValue(ch, x, synth(ch, r, [at(x, r)]), r, false) - targetValue(ch, x, base, r, false));
    }
    const change = mean(changes) * (x.direction ?? 1);
    // Against the calibration's own sd (other runs): the sizing itself.
    expect(change / x.target.sd! / x.size).toBeGreaterThan(0.85);
    expect(change / x.target.sd! / x.size).toBeLessThan(1.15);
    // Against an independent estimate of the spread from this chamber's own runs.
    expect(change / sd(inControl) / x.size).toBeGreaterThan(0.65);
    expect(change / sd(inControl) / x.size).toBeLessThan(1.4);
  });

  it('correlated-pair moves each sensor within its own spread while their difference moves by size sd', () => {
    const x = planExcursions(fab, { count: 1, kinds: ['correlated-pair'], sizes: [3], afterRun: 25, runsPerChamber: 120, seed: 5 })[0]!;
    const ch = chamberOf(fab, x);
    const own = (svid: string) => {
      const k = ch.sensors.findIndex((s) => s.name === svid);
      const values: number[] = [];
      const changes: number[] = [];
      for (let r = FIRST; r < FIRST + PAIRS; r++) {
        const base = synth(ch, r);
        const slow = ch.sensors[k]!.runSigma * slowLevelSigmas(ch, k, r);
        values.push(statistic(base, svid, x.step, 'mean') - slow);
        changes.push(statistic(synth(ch, r, [at(x, r)]), svid, x.step, 'mean') - statistic(base, svid, x.step, 'mean'));
      }
      return mean(changes) / sd(values);
    };
    const up = own(x.svid);
    const down = own(x.svid2!);
    expect(up).toBeGreaterThan(0);
    expect(up).toBeLessThan(1);
    expect(down).toBeLessThan(0);
    expect(down).toBeGreaterThan(-1);
    // Each sensor moves by the magnitude in its own sds; the standardised difference by 3 of its sds.
    expect((2 * x.magnitude) / x.target.sd!).toBeCloseTo(3, 1);
  });

  it('drift grows linearly to its full size at its last run', () => {
    const x = plan.find((e) => e.kind === 'drift')!;
    const ch = chamberOf(fab, x);
    const n = x.endRun - x.startRun + 1;
    const shift = (r: number) => targetValue(ch, x, synth(ch, r, [x]), r, false) - targetValue(ch, x, synth(ch, r), r, false);
    expect(shift(x.startRun) / x.magnitude).toBeCloseTo(1 / n, 2);
    expect(shift(x.endRun) / x.magnitude).toBeCloseTo(1, 2);
    expect(shift(x.endRun + 1)).toBe(0);
  });

  it('is deterministic: the same excursion gives the same trace', () => {
    const x = plan.find((e) => e.kind === 'spike')!;
    const ch = chamberOf(fab, x);
    expect(synth(ch, x.startRun, [x]).svids.get(x.svid)).toEqual(synth(ch, x.startRun, [x]).svids.get(x.svid));
    expect(synth(ch, x.startRun, [x]).svids.get(x.svid)).not.toEqual(synth(ch, x.startRun).svids.get(x.svid));
  });
});

describe('effectsFor', () => {
  const x = (kind: Excursion['kind'], magnitude: number, extra: Partial<Excursion> = {}): Excursion => ({
    id: kind,
    chamber: 'T:C',
    toolId: 'T',
    chamberId: 'C',
    svid: 'P',
    kind,
    startRun: 10,
    endRun: 13,
    size: 2,
    target: { svid: 'P', statistic: 'mean' },
    magnitude,
    description: '',
    ...extra,
  });

  it.each([
    ['mean-shift', 3, 9, undefined],
    ['mean-shift', 3, 10, [{ kind: 'offset', value: 3 }]],
    ['mean-shift', 3, 14, undefined],
    ['drift', 2, 10, [{ kind: 'offset', value: 0.5 }]],
    ['drift', 2, 13, [{ kind: 'offset', value: 2 }]],
    ['variance-burst', 0.5, 11, [{ kind: 'noise', factor: 1.5, step: 'S' }]],
    ['slow-settle', 1, 11, [{ kind: 'settle', factor: 2, step: 'S' }]],
    ['ramp-slope', 0.25, 11, [{ kind: 'ramp', factor: 0.75, step: 'S' }]],
    ['long-step', 4, 11, [{ kind: 'stretch', seconds: 4, step: 'S' }]],
    ['overshoot', 0.1, 11, [{ kind: 'overshoot', extra: 0.1, step: 'S' }]],
  ] as const)('%s of magnitude %d on run %d', (kind, m, run, want) => {
    expect(effectsFor([x(kind, m, { step: 'S' })], run).get('P')).toEqual(want);
  });

  it('places a spike inside its step, per run', () => {
    const fx = effectsFor([x('spike', 5, { step: 'S', seconds: 4 })], 12).get('P')!;
    expect(fx).toEqual([{ kind: 'pulse', step: 'S', height: 5, seconds: 4, at: expect.any(Number) }]);
  });

  it('moves a correlated pair apart, each by the magnitude in its own sds', () => {
    const fx = effectsFor([x('correlated-pair', 0.5, { svid2: 'Q', target: { svid: 'P', svid2: 'Q', statistic: 'mean-difference', scale: [2, 4] } })], 11);
    expect(fx.get('P')).toEqual([{ kind: 'offset', value: 1 }]);
    expect(fx.get('Q')).toEqual([{ kind: 'offset', value: -2 }]);
  });

  it('parses kinds and sizes', () => {
    expect(parseKinds('drift, spike')).toEqual(['drift', 'spike']);
    expect(() => parseKinds('drift,melt')).toThrow(/unknown excursion kind "melt"/);
    expect(parseSizes('1, 2.5,3')).toEqual([1, 2.5, 3]);
    expect(() => parseSizes('1,-2')).toThrow(RangeError);
  });
});
