import { computeBaseStatistics, createBaseStatistics, type BaseStatistics, type SampleTiming } from '@defender/uchart';
import type { ChamberSpec, FabSpec, SensorSpec } from './fab';
import { intIn, mix, rng, type Rng } from './rng';
import { samplesPerRun, stepStarts, synthesizeSensors, type Effect, type RunEffects, type RunLayout } from './trace';

export type { Effect, RunEffects } from './trace';

/** Every excursion kind, in the order the planner cycles through them. */
export const EXCURSION_KINDS = [
  'mean-shift',
  'step-mean-shift',
  'drift',
  'spike',
  'dropout',
  'variance-burst',
  'overshoot',
  'slow-settle',
  'long-step',
  'ramp-slope',
  'correlated-pair',
] as const;
/**
 * The `real-equipment` profile's kinds: every kind above and `closed-loop` (a fault the tool's
 * controller holds in the held sensor: only the reacting sensors of its loop move). Not in
 * {@link EXCURSION_KINDS}, so the `detection` profile's plans stay as they were.
 */
export const REAL_EQUIPMENT_KINDS = [...EXCURSION_KINDS, 'closed-loop'] as const;
export type ExcursionKind = (typeof REAL_EQUIPMENT_KINDS)[number];

/**
 * The statistic an excursion moves, with the product's definitions (libs/uchart): `std` divisor
 * n - 1, `slope` least squares per second, `duration` seconds from the window's first to its last
 * sample; `mean-difference` is `mean(svid) / scale[0] - mean(svid2) / scale[1]`, each sensor's mean
 * in its own in-control standard deviations.
 */
export type TargetStatistic = 'mean' | 'max' | 'min' | 'std' | 'slope' | 'duration' | 'mean-difference';

/** What an excursion moves: a statistic of one SVID (two for `mean-difference`) over a step or the whole run. */
export interface ExcursionTarget {
  readonly svid: string;
  readonly svid2?: string;
  /** Recipe step of the window; absent: the whole context. */
  readonly step?: string;
  /** One of {@link TargetStatistic}. */
  readonly statistic: string;
  /**
   * In-control run-to-run standard deviation of the statistic at a fixed tool age (its unit), from
   * the calibration runs; the excursion moves the statistic's mean by `size x sd`. Set by
   * {@link planExcursions}.
   */
  readonly sd?: number;
  /** `mean-difference`: the in-control standard deviations of the two sensors' means. */
  readonly scale?: readonly [number, number];
}

/**
 * An injected fault, the ground truth a detection run is scored against. Runs are 0-based indexes
 * of the chamber's runs.
 */
export interface Excursion {
  readonly id: string;
  readonly chamber: string;
  readonly toolId: string;
  readonly chamberId: string;
  /** The sensor (for `correlated-pair`: the one that moves up). */
  readonly svid: string;
  /** `correlated-pair`: the sensor that moves down. */
  readonly svid2?: string;
  readonly step?: string;
  readonly kind: ExcursionKind;
  readonly startRun: number;
  /** Last affected run (inclusive). */
  readonly endRun: number;
  /** Change of the target statistic's mean in its in-control standard deviations (`target.sd`). */
  readonly size: number;
  readonly target: ExcursionTarget;
  /**
   * The calibrated physical magnitude (see {@link EXCURSION_SHAPES}): `mean-shift`,
   * `step-mean-shift`, `spike`: added to the level (sensor unit, signed); `drift`: the offset at the
   * last run (signed); `dropout`: depth, the fraction the signal falls toward zero; `variance-burst`:
   * noise factor - 1; `overshoot`: overshoot added, as a fraction of the step change; `slow-settle`:
   * time-constant factor - 1; `long-step`: seconds added; `ramp-slope`: the fraction the ramp rate
   * falls by; `correlated-pair`: shift of each sensor in its own standard deviations (`target.scale`).
   */
  readonly magnitude: number;
  /** Sign of the target statistic's change. */
  readonly direction?: 1 | -1;
  /** `spike`, `dropout`: how long the pulse lasts, seconds. */
  readonly seconds?: number;
  /**
   * `closed-loop`: the other reacting sensors of the loop and their shift per unit of `magnitude`
   * (sensor unit per unit of `svid`'s shift); `held` the sensor the controller keeps at its setpoint.
   */
  readonly coupled?: readonly (readonly [string, number])[];
  readonly held?: string;
  readonly description: string;
}

/** Length in runs, target statistic and window of each kind. */
export const EXCURSION_SHAPES: Readonly<Record<ExcursionKind, { runs: number; statistic: TargetStatistic; window: 'context' | 'step'; what: string }>> = {
  'mean-shift': { runs: 6, statistic: 'mean', window: 'context', what: 'the whole run\'s level shifts' },
  'step-mean-shift': { runs: 6, statistic: 'mean', window: 'step', what: 'one step\'s level shifts' },
  drift: { runs: 10, statistic: 'mean', window: 'context', what: 'the level shifts by a little more each run' },
  spike: { runs: 2, statistic: 'max', window: 'step', what: 'a pulse of 3-10 s inside one step (max up, or min down)' },
  dropout: { runs: 2, statistic: 'min', window: 'step', what: 'the signal falls toward zero for 3-10 s inside one step' },
  'variance-burst': { runs: 4, statistic: 'std', window: 'step', what: 'within-run noise grows in one step' },
  overshoot: { runs: 6, statistic: 'max', window: 'step', what: 'a larger overshoot at a step start (max up, or min down for a falling step)' },
  'slow-settle': { runs: 6, statistic: 'mean', window: 'step', what: 'a slower settling time constant at a step start' },
  'long-step': { runs: 4, statistic: 'duration', window: 'step', what: 'an endpoint-controlled step lasts longer; later steps shift' },
  'ramp-slope': { runs: 6, statistic: 'slope', window: 'step', what: 'a ramp step ramps slower' },
  'correlated-pair': { runs: 6, statistic: 'mean-difference', window: 'step', what: 'the correlated pair moves apart, each within its own spread' },
  'closed-loop': { runs: 6, statistic: 'mean', window: 'context', what: 'a fault the controller holds: its held sensor reads the setpoint, the reacting sensors move together' },
};

/** In-control runs synthesised to calibrate an excursion (the brief asks for 30-60). */
export const CALIBRATION_RUNS = 40;
/** Run indexes of the calibration runs: fixed, far from any simulated run, independent of the plan. */
const CALIBRATION_BASE = 2_000_000_000;
/** Runs between two excursions of one chamber (`maxPerChamber` > 1). */
export const MIN_GAP_RUNS = 15;

export interface ExcursionPlanOptions {
  /** Excursions to inject. */
  readonly count: number;
  readonly kinds?: readonly ExcursionKind[];
  /** Sizes in sigma units of the target statistic, used in turn (default [1, 2, 3]). */
  readonly sizes?: readonly number[];
  /** First run index an excursion may start at: after Phase I (20 runs) and some in-control runs. */
  readonly afterRun: number;
  readonly runsPerChamber: number;
  readonly seed: number;
  /** Excursions per chamber (default 1); several on one chamber do not overlap and are >= 15 runs apart. */
  readonly maxPerChamber?: number;
  /**
   * Lengths in runs, [min, max], drawn per excursion (from a stream of its own, so plans without it
   * are unchanged); absent: each kind's {@link EXCURSION_SHAPES} length.
   */
  readonly runsRange?: readonly [number, number];
}

interface Candidate {
  readonly k: number;
  readonly k2?: number;
  readonly step?: number;
  readonly statistic: TargetStatistic;
  readonly direction: 1 | -1;
  readonly seconds?: number;
  readonly coupled?: readonly (readonly [string, number])[];
  readonly held?: string;
}

/** The fields of an excursion its effects depend on. */
type EffectShape = Pick<Excursion, 'kind' | 'svid' | 'svid2' | 'step' | 'magnitude' | 'seconds' | 'coupled'> & { readonly scale?: readonly [number, number] };

function kindEffects(x: EffectShape, fraction: number, at: number): Map<string, Effect[]> {
  const m = x.magnitude;
  const step = x.step ?? '';
  const seconds = x.seconds ?? 5;
  const one = (e: Effect): Map<string, Effect[]> => new Map([[x.svid, [e]]]);
  switch (x.kind) {
    case 'mean-shift':
      return one({ kind: 'offset', value: m });
    case 'drift':
      return one({ kind: 'offset', value: m * fraction });
    case 'step-mean-shift':
      return one({ kind: 'offset', value: m, step });
    case 'spike':
      return one({ kind: 'pulse', step, height: m, seconds, at });
    case 'dropout':
      return one({ kind: 'dropout', step, depth: m, seconds, at });
    case 'variance-burst':
      return one({ kind: 'noise', factor: 1 + m, step });
    case 'overshoot':
      return one({ kind: 'overshoot', step, extra: m });
    case 'slow-settle':
      return one({ kind: 'settle', step, factor: 1 + m });
    case 'long-step':
      return one({ kind: 'stretch', step, seconds: m });
    case 'ramp-slope':
      return one({ kind: 'ramp', step, factor: 1 - m });
    case 'closed-loop': {
      // The held sensor gets nothing: its controller keeps it at the setpoint.
      const out = new Map<string, Effect[]>([[x.svid, [{ kind: 'offset', value: m }]]]);
      for (const [svid, per] of x.coupled ?? []) out.set(svid, [{ kind: 'offset', value: m * per }]);
      return out;
    }
    case 'correlated-pair': {
      const [s1, s2] = x.scale ?? [1, 1];
      const out = new Map<string, Effect[]>([[x.svid, [{ kind: 'offset', value: m * s1 }]]]);
      if (x.svid2 !== undefined) out.set(x.svid2, [{ kind: 'offset', value: -m * s2 }]);
      return out;
    }
  }
}

function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Where a pulse falls in its step in run `runIndex`, [0, 1). */
function pulseAt(key: number, runIndex: number): number {
  return rng(mix(key, runIndex, 0xa7))();
}

/**
 * The effects of `excursions` (of one chamber) on run `runIndex`, by sensor name (empty: none).
 * A `drift` of L runs applies `(i + 1) / L` of its magnitude in its run `startRun + i`.
 */
export function effectsFor(excursions: readonly Excursion[], runIndex: number): RunEffects {
  const out = new Map<string, Effect[]>();
  for (const x of excursions) {
    if (runIndex < x.startRun || runIndex > x.endRun) continue;
    const fraction = x.kind === 'drift' ? (runIndex - x.startRun + 1) / (x.endRun - x.startRun + 1) : 1;
    const shape: EffectShape = x.target.scale ? { ...x, scale: x.target.scale } : x;
    for (const [svid, fx] of kindEffects(shape, fraction, pulseAt(hashString(`${x.chamber}#${x.id}`), runIndex))) {
      out.set(svid, [...(out.get(svid) ?? []), ...fx]);
    }
  }
  return out;
}

const TIMING_CACHE = new WeakMap<ChamberSpec, SampleTiming>();

function timingOf(ch: ChamberSpec): SampleTiming {
  let t = TIMING_CACHE.get(ch);
  if (!t) TIMING_CACHE.set(ch, (t = { kind: 'regular', startSeconds: 0, frequencyHz: ch.collectionFreqHz }));
  return t;
}

function windowStats(ch: ChamberSpec, a: Float32Array, layout: RunLayout, step: number | undefined, out: BaseStatistics): BaseStatistics {
  const range = step === undefined ? { start: 0, end: layout.n } : { start: layout.starts[step] ?? layout.n, end: layout.starts[step + 1] ?? layout.n };
  return computeBaseStatistics(a, timingOf(ch), range, out);
}

function pick1(stat: TargetStatistic, b: BaseStatistics): number {
  switch (stat) {
    case 'mean':
    case 'mean-difference':
      return b.mean;
    case 'max':
      return b.max;
    case 'min':
      return b.min;
    case 'std':
      return b.std;
    case 'slope':
      return b.slopePerSecond;
    case 'duration':
      return b.durationSeconds;
  }
}

function meanOf(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i] as number;
  return s / xs.length;
}

function sdOf(xs: ArrayLike<number>): number {
  const m = meanOf(xs);
  let v = 0;
  for (let i = 0; i < xs.length; i++) v += ((xs[i] as number) - m) ** 2;
  return Math.sqrt(v / (xs.length - 1));
}

interface Calibrated {
  readonly magnitude: number;
  readonly sd: number;
  readonly scale?: readonly [number, number];
}

/** Every kind's first guess and largest magnitude (beyond it the effect saturates or makes no sense). */
function searchRange(ch: ChamberSpec, kind: ExcursionKind, c: Candidate, target: number): { m0: number; cap: number } {
  const sensor = ch.sensors[c.k];
  switch (kind) {
    case 'dropout': {
      const level = Math.abs(sensor?.stepLevels[c.step ?? 0] ?? 1) || 1;
      return { m0: Math.min(0.5, Math.max(1e-4, target / level)), cap: 1 };
    }
    case 'variance-burst':
      return { m0: 0.1, cap: 100 };
    case 'overshoot': {
      const z = sensor?.damping ?? 0.7;
      const os0 = Math.exp((-Math.PI * z) / Math.sqrt(1 - z * z));
      return { m0: 0.02, cap: 0.95 - os0 };
    }
    case 'slow-settle':
      return { m0: 0.2, cap: 30 };
    case 'ramp-slope':
      return { m0: 0.05, cap: 0.9 };
    case 'long-step': {
      const n = samplesPerRun(ch);
      const starts = stepStarts(ch, n);
      const s = c.step ?? 0;
      const seconds = ((starts[s + 1] ?? n) - (starts[s] ?? 0)) / ch.collectionFreqHz;
      return { m0: target, cap: 5 * seconds };
    }
    case 'correlated-pair':
      return { m0: target / 2, cap: 100 };
    default:
      return { m0: target, cap: 1e6 * (target + 1) };
  }
}

/**
 * Finds m in (0, cap] with g(m) = target for an increasing g (g(0) = 0): expands from m0 until the
 * target is bracketed, then safeguarded secant steps. Undefined when even `cap` falls short.
 */
function solve(g: (m: number) => number, target: number, m0: number, cap: number): number | undefined {
  let lo = 0;
  let gLo = 0;
  let hi = Number.NaN;
  let gHi = Number.NaN;
  let m = Math.min(Math.max(m0, 1e-12), cap);
  let best = { m: 0, err: Infinity };
  for (let it = 0; it < 60; it++) {
    const v = g(m);
    const err = Math.abs(v - target);
    if (err < best.err) best = { m, err };
    if (err <= 0.003 * target) return m;
    if (v < target) {
      lo = m;
      gLo = v;
    } else {
      hi = m;
      gHi = v;
    }
    let next: number;
    if (Number.isNaN(hi)) {
      if (m >= cap) break;
      next = Math.min(cap, v > 0 ? m * Math.min(8, Math.max(1.25, target / v)) : m * 8);
    } else {
      const w = hi - lo;
      if (w <= 1e-12 * Math.max(1, hi)) break;
      next = it % 4 === 3 ? (lo + hi) / 2 : lo + ((target - gLo) * w) / (gHi - gLo);
      if (!(next > lo + 0.01 * w && next < hi - 0.01 * w)) next = (lo + hi) / 2;
    }
    m = next;
  }
  return best.err <= 0.03 * target ? best.m : undefined;
}

/**
 * Calibrates one excursion: synthesises CALIBRATION_RUNS in-control runs of the target sensor(s) with
 * the PM ageing and wander held at zero (they only add a constant to a run, so this is the spread at
 * a fixed tool age), takes the target statistic's run-to-run sd (n - 1), then finds the magnitude at
 * which the statistic's mean change over the same runs with the effect (paired: same seeds) is
 * `size x sd`. Undefined when the statistic has no spread or no magnitude gets there.
 */
function calibrate(ch: ChamberSpec, kind: ExcursionKind, c: Candidate, size: number): Calibrated | undefined {
  const ks = c.k2 === undefined ? [c.k] : [c.k, c.k2];
  const svid = ch.sensors[c.k]?.name ?? '';
  const svid2 = c.k2 === undefined ? undefined : ch.sensors[c.k2]?.name;
  const step = c.step === undefined ? undefined : ch.recipe.steps[c.step]?.name;
  const b = createBaseStatistics();
  const runs = CALIBRATION_RUNS;
  const idx = (i: number) => CALIBRATION_BASE + i;

  const statOf = (arrays: Float32Array[], layout: RunLayout, scale?: readonly [number, number]): number => {
    const v = pick1(c.statistic, windowStats(ch, arrays[0] as Float32Array, layout, c.step, b));
    if (c.statistic !== 'mean-difference' || !scale) return v;
    const v2 = windowStats(ch, arrays[1] as Float32Array, layout, c.step, b).mean;
    return v / scale[0] - v2 / scale[1];
  };

  const baseRuns = Array.from({ length: runs }, (_, i) => synthesizeSensors(ch, idx(i), undefined, ks, false, c.step));
  let scale: readonly [number, number] | undefined;
  if (c.statistic === 'mean-difference') {
    const m1 = baseRuns.map((r) => windowStats(ch, r.arrays[0] as Float32Array, r.layout, c.step, b).mean);
    const m2 = baseRuns.map((r) => windowStats(ch, r.arrays[1] as Float32Array, r.layout, c.step, b).mean);
    scale = [sdOf(m1), sdOf(m2)];
    if (!(scale[0] > 0 && scale[1] > 0)) return undefined;
  }
  const base = Float64Array.from(baseRuns, (r) => statOf(r.arrays, r.layout, scale));
  if (!base.every(Number.isFinite)) return undefined;
  const sd = sdOf(base);
  if (!(sd > 0)) return undefined;
  const target = size * sd;
  const signed = kind === 'mean-shift' || kind === 'step-mean-shift' || kind === 'drift' || kind === 'spike' || kind === 'closed-loop';
  const key = mix(ch.seed, 0xca1);
  const g = (m: number): number => {
    const shape: EffectShape = { kind, svid, svid2, step, magnitude: signed ? c.direction * m : m, seconds: c.seconds, scale, coupled: c.coupled };
    let sum = 0;
    for (let i = 0; i < runs; i++) {
      const r = synthesizeSensors(ch, idx(i), kindEffects(shape, 1, pulseAt(key, idx(i))), ks, false, c.step);
      sum += statOf(r.arrays, r.layout, scale) - (base[i] as number);
    }
    return (c.direction * sum) / runs;
  };
  const { m0, cap } = searchRange(ch, kind, c, target);
  if (!(cap > 0)) return undefined;
  const m = solve(g, target, m0, cap);
  if (m === undefined) return undefined;
  return { magnitude: signed ? c.direction * m : m, sd, ...(scale ? { scale } : {}) };
}

function shuffled<T>(u: Rng, xs: readonly T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(u() * (i + 1));
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

/** The (sensor, step) targets a kind can have on a chamber, in a random order. */
function candidatesFor(ch: ChamberSpec, kind: ExcursionKind, u: Rng): Candidate[] {
  const f = ch.collectionFreqHz;
  const n = samplesPerRun(ch);
  const starts = stepStarts(ch, n);
  const steps = ch.recipe.steps;
  const lenOf = (s: number) => (starts[s + 1] ?? n) - (starts[s] ?? 0);
  const sign = (): 1 | -1 => (u() < 0.5 ? -1 : 1);
  const out: Candidate[] = [];
  const quiet: Candidate[] = [];
  const longest = steps.reduce((best, _s, i) => (lenOf(i) > lenOf(best) ? i : best), 0);
  ch.sensors.forEach((sensor, k) => {
    // A held sensor's faults are `closed-loop` ones; a few-level state has no analog faults.
    if (sensor.role === 'held' || sensor.role === 'state') return;
    const lv = sensor.stepLevels;
    const strong = (d: number) => Math.abs(d) >= 10 * sensor.noiseSigma;
    for (let s = 0; s < steps.length; s++) {
      const len = lenOf(s);
      const step = steps[s];
      if (!step) continue;
      const prevLevel = s === 0 ? (lv[steps.length - 1] ?? 0) : (lv[s - 1] ?? 0);
      const delta = (lv[s] ?? 0) - prevLevel;
      switch (kind) {
        case 'step-mean-shift':
          if (len >= 10) out.push({ k, step: s, statistic: 'mean', direction: sign() });
          break;
        case 'spike':
        case 'dropout': {
          const seconds = 3 + Math.floor(u() * 8);
          const direction = kind === 'dropout' ? -1 : sign();
          if (!step.ramp && len >= Math.max(20, 3 * Math.round(seconds * f))) {
            // Where the step change itself makes the extreme (a falling step starts high, a rising
            // one overshoots), a pulse must first clear that: steps whose extreme is the noise come first.
            const jump = s === 0 ? 0 : delta;
            const os = Math.exp((-Math.PI * sensor.damping) / Math.sqrt(1 - sensor.damping ** 2));
            const excess = direction * jump > 0 ? Math.abs(jump) * os : Math.abs(jump);
            (excess <= 3 * sensor.noiseSigma ? quiet : out).push({ k, step: s, statistic: direction > 0 ? 'max' : 'min', direction, seconds });
          }
          break;
        }
        case 'variance-burst':
          // Not a ramp step: its std is mostly the ramp.
          if (!step.ramp && len >= 30) out.push({ k, step: s, statistic: 'std', direction: 1 });
          break;
        case 'overshoot': {
          const z = sensor.damping;
          const peakSeconds = Math.PI / ((1 / (z * sensor.settleSeconds)) * Math.sqrt(1 - z * z));
          if (s > 0 && !step.ramp && strong(delta) && len >= (peakSeconds + 2) * f) {
            out.push({ k, step: s, statistic: delta > 0 ? 'max' : 'min', direction: delta > 0 ? 1 : -1 });
          }
          break;
        }
        case 'slow-settle':
          if (s > 0 && !step.ramp && strong(delta) && len >= Math.max(10, 3 * sensor.settleSeconds * f)) {
            out.push({ k, step: s, statistic: 'mean', direction: delta > 0 ? -1 : 1 });
          }
          break;
        case 'long-step':
          if ((step.durationSd ?? 0) > 0 && len >= 5) out.push({ k, step: s, statistic: 'duration', direction: 1 });
          break;
        case 'ramp-slope':
          if (step.ramp && strong(delta) && len >= 5) out.push({ k, step: s, statistic: 'slope', direction: delta > 0 ? -1 : 1 });
          break;
        default:
          break;
      }
    }
    if (kind === 'mean-shift' || kind === 'drift') out.push({ k, statistic: 'mean', direction: sign() });
  });
  if (kind === 'correlated-pair' && ch.correlatedPair) {
    const a = ch.sensors.findIndex((s) => s.name === ch.correlatedPair?.[0]);
    const b = ch.sensors.findIndex((s) => s.name === ch.correlatedPair?.[1]);
    if (a >= 0 && b >= 0) {
      // Which of the two goes up is drawn; the statistic rises either way.
      const [up, down] = u() < 0.5 ? [a, b] : [b, a];
      out.push({ k: up, k2: down, step: longest, statistic: 'mean-difference', direction: 1 });
    }
  }
  if (kind === 'closed-loop') {
    for (const loop of ch.equipment?.loops ?? []) {
      const ks = loop.reacting.map((n) => ch.sensors.findIndex((s) => s.name === n));
      const k = ks[0] ?? -1;
      const primary = ch.sensors[k];
      if (!primary || ks.some((i) => i < 0)) continue;
      const g0 = loop.faultGains[0] ?? 1;
      // Each reacting sensor moves by its gain in its own run sds per unit of fault.
      const coupled = ks.slice(1).map((i, j): readonly [string, number] => {
        const s = ch.sensors[i] as SensorSpec;
        return [s.name, ((loop.faultGains[j + 1] ?? 0) * s.runSigma) / (g0 * primary.runSigma)];
      });
      out.push({ k, statistic: 'mean', direction: sign(), coupled, held: loop.held });
    }
  }
  return [...shuffled(u, quiet), ...shuffled(u, out)];
}

const fmt = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(1) : Number(x.toPrecision(3)).toString());

function describe(ch: ChamberSpec, kind: ExcursionKind, c: Candidate, size: number, magnitude: number, runs: number): string {
  const sensor = ch.sensors[c.k];
  const name = sensor?.name ?? '?';
  const unit = sensor?.unit ?? '';
  const step = c.step === undefined ? '' : (ch.recipe.steps[c.step]?.name ?? '');
  const signed = (x: number) => `${x >= 0 ? '+' : ''}${fmt(x)}`;
  const sz = `${size} sd`;
  switch (kind) {
    case 'mean-shift':
      return `${name} level ${signed(magnitude)} ${unit} for ${runs} runs: run mean moves ${sz}`;
    case 'step-mean-shift':
      return `${name} level in ${step} ${signed(magnitude)} ${unit} for ${runs} runs: the step mean moves ${sz}`;
    case 'drift':
      return `${name} level drifts linearly over ${runs} runs, ${signed(magnitude / runs)} ${unit} more each run, to ${signed(magnitude)} ${unit} at its last run: run mean ${sz} there (${fmt(size / runs)} sd per run)`;
    case 'spike':
      return `${name} pulse of ${signed(magnitude)} ${unit} for ${c.seconds} s inside ${step}, ${runs} runs: the step ${c.statistic} moves ${sz}`;
    case 'dropout':
      return `${name} falls ${fmt(magnitude * 100)}% toward zero for ${c.seconds} s inside ${step}, ${runs} runs: the step min moves ${sz}`;
    case 'variance-burst':
      return `${name} noise x${fmt(1 + magnitude)} in ${step} for ${runs} runs: the step std moves ${sz}`;
    case 'overshoot':
      return `${name} overshoot at the start of ${step} larger by ${fmt(magnitude * 100)}% of the step change for ${runs} runs: the step ${c.statistic} moves ${sz}`;
    case 'slow-settle':
      return `${name} settles x${fmt(1 + magnitude)} slower at the start of ${step} for ${runs} runs: the step mean moves ${sz}`;
    case 'long-step':
      return `${step} lasts ${fmt(magnitude)} s longer (later steps shift) for ${runs} runs: its duration moves ${sz}`;
    case 'ramp-slope':
      return `${name} ramps ${fmt(magnitude * 100)}% slower in ${step} for ${runs} runs: the step slope moves ${sz}`;
    case 'closed-loop':
      return `${c.held ?? '?'} held at its setpoint by its controller while the physics under it is off: ${name} ${signed(magnitude)} ${unit} and ${(c.coupled ?? []).map(([n, per]) => `${n} ${signed(magnitude * per)}`).join(', ')} for ${runs} runs: the run mean of ${name} moves ${sz}`;
    case 'correlated-pair': {
      const other = c.k2 === undefined ? '?' : (ch.sensors[c.k2]?.name ?? '?');
      return `${name} up and ${other} down by ${fmt(magnitude)} of their own sd each in ${step} for ${runs} runs: their standardised mean difference moves ${sz}`;
    }
  }
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** A start run for a window of `len` runs on a chamber that already has `taken` windows, or undefined. */
function pickStart(u: Rng, taken: readonly (readonly [number, number])[], len: number, opts: ExcursionPlanOptions): number | undefined {
  const latest = opts.runsPerChamber - len;
  const ok = (s: number) => taken.every(([a, b]) => s >= b + 1 + MIN_GAP_RUNS || s + len - 1 + MIN_GAP_RUNS < a);
  let count = 0;
  for (let s = opts.afterRun; s <= latest; s++) if (ok(s)) count++;
  if (count === 0) return undefined;
  let j = Math.floor(u() * count);
  for (let s = opts.afterRun; s <= latest; s++) {
    if (!ok(s)) continue;
    if (j-- === 0) return s;
  }
  return undefined;
}

/**
 * Plans `count` excursions, each on one target of one chamber, calibrated in sigma units of the
 * statistic it moves (see {@link calibrate}). Kinds are used in turn and sizes in turn, independently,
 * so every (kind, size) pair occurs; chambers are taken in a seeded random order, every chamber once
 * before any gets a second (`maxPerChamber`). A kind a chamber cannot host (e.g. `correlated-pair`
 * with one sensor) goes to the next chamber. Fewer are planned when the runs or chambers cannot hold
 * them (the caller reports it). Deterministic for the options.
 *
 * @throws RangeError for a size that is not a positive finite number.
 */
export function planExcursions(fab: FabSpec, opts: ExcursionPlanOptions): Excursion[] {
  const wanted = opts.kinds && opts.kinds.length > 0 ? opts.kinds : EXCURSION_KINDS;
  const sizes = opts.sizes && opts.sizes.length > 0 ? opts.sizes : [1, 2, 3];
  for (const s of sizes) if (!(Number.isFinite(s) && s > 0)) throw new RangeError(`excursion sizes must be positive numbers, got ${s}`);
  const maxPer = Math.max(1, Math.floor(opts.maxPerChamber ?? 1));
  // Only kinds whose runs fit between afterRun and the last run.
  const range = opts.runsRange;
  const longest = (k: ExcursionKind) => (range ? Math.max(range[0], range[1]) : EXCURSION_SHAPES[k].runs);
  const kinds = wanted.filter((k) => opts.runsPerChamber - longest(k) >= opts.afterRun);
  const u = rng(mix(opts.seed, 0xe7c));
  const lengths = range ? rng(mix(opts.seed, 0x1e9)) : undefined;
  // Positions in `fab.chambers` (a caller may pass a subset of a fab, so not `ChamberSpec.index`).
  const order = fab.chambers.map((_c, i) => i).sort(() => u() - 0.5);
  const windows = new Map<number, [number, number][]>();
  const out: Excursion[] = [];
  if (kinds.length === 0) return out;
  const period = (kinds.length * sizes.length) / gcd(kinds.length, sizes.length);
  let pending = [...order];
  let pass = 0;
  let placedInPass = 0;
  let failedInARow = 0;
  for (let slot = 0; out.length < opts.count; slot++) {
    const kind = kinds[slot % kinds.length] as ExcursionKind;
    // Shifting the sizes by one every full period pairs every kind with every size.
    const size = sizes[(slot + Math.floor(slot / period)) % sizes.length] as number;
    const runs = range && lengths ? intIn(lengths, Math.min(range[0], range[1]), Math.max(range[0], range[1])) : EXCURSION_SHAPES[kind].runs;
    let placed = false;
    for (let p = 0; p < pending.length && !placed; p++) {
      const idx = pending[p] as number;
      const ch = fab.chambers[idx];
      if (!ch) continue;
      const taken = windows.get(idx) ?? [];
      const startRun = pickStart(u, taken, runs, opts);
      if (startRun === undefined) continue;
      for (const c of candidatesFor(ch, kind, u)) {
        const cal = calibrate(ch, kind, c, size);
        if (!cal) continue;
        const svid = ch.sensors[c.k]?.name ?? '';
        const svid2 = c.k2 === undefined ? undefined : ch.sensors[c.k2]?.name;
        const step = c.step === undefined ? undefined : ch.recipe.steps[c.step]?.name;
        out.push({
          id: `x${out.length + 1}`,
          chamber: ch.key,
          toolId: ch.toolId,
          chamberId: ch.chamberId,
          svid,
          ...(svid2 !== undefined ? { svid2 } : {}),
          ...(step !== undefined ? { step } : {}),
          kind,
          startRun,
          endRun: startRun + runs - 1,
          size,
          target: {
            svid,
            ...(svid2 !== undefined ? { svid2 } : {}),
            ...(step !== undefined ? { step } : {}),
            statistic: c.statistic,
            sd: cal.sd,
            ...(cal.scale ? { scale: cal.scale } : {}),
          },
          magnitude: cal.magnitude,
          direction: c.direction,
          ...(c.seconds !== undefined ? { seconds: c.seconds } : {}),
          ...(c.coupled !== undefined ? { coupled: c.coupled } : {}),
          ...(c.held !== undefined ? { held: c.held } : {}),
          description: describe(ch, kind, c, size, cal.magnitude, runs),
        });
        windows.set(idx, [...taken, [startRun, startRun + runs - 1]]);
        pending.splice(p, 1);
        placed = true;
        break;
      }
    }
    if (placed) placedInPass++;
    failedInARow = placed ? 0 : failedInARow + 1;
    // The pass ends when every chamber had its turn, or no chamber left in it takes any kind.
    if (pending.length === 0 || failedInARow >= kinds.length) {
      if (placedInPass === 0 || pass + 1 >= maxPer) break;
      pass++;
      placedInPass = 0;
      failedInARow = 0;
      pending = order.filter((i) => (windows.get(i)?.length ?? 0) < maxPer);
      if (pending.length === 0) break;
    }
  }
  return out;
}

/** Excursions grouped by chamber key. */
export function byChamber(excursions: readonly Excursion[]): Map<string, Excursion[]> {
  const m = new Map<string, Excursion[]>();
  for (const x of excursions) m.set(x.chamber, [...(m.get(x.chamber) ?? []), x]);
  return m;
}

/** Parses `mean-shift,drift`; throws on an unknown kind. */
export function parseKinds(text: string): ExcursionKind[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((k) => {
      if (!(REAL_EQUIPMENT_KINDS as readonly string[]).includes(k)) throw new RangeError(`unknown excursion kind "${k}" (${REAL_EQUIPMENT_KINDS.join(', ')})`);
      return k as ExcursionKind;
    });
}

/** Parses `1,2,3` (sizes in sigma units); throws on anything but positive numbers. */
export function parseSizes(text: string): number[] {
  const out = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const v = Number(s);
      if (!(Number.isFinite(v) && v > 0)) throw new RangeError(`excursion sizes must be positive numbers, got "${s}"`);
      return v;
    });
  if (out.length === 0) throw new RangeError('no excursion size given');
  return out;
}

/** The chamber of an excursion. */
export function chamberOf(fab: FabSpec, x: Excursion): ChamberSpec | undefined {
  return fab.chambers.find((c) => c.key === x.chamber);
}
