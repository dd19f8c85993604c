import type { TraceRecord, TraceStep } from '@defender/contracts';
import { runGaussian, slowLevelSigmas, svidName, type ChamberSpec } from './fab';
import { eventLevelSigmas, LOOP_FACTOR_CORRELATION } from './real-equipment';
import { Gaussian, mix, rng } from './rng';

// Module-level references: the per-sample loops then skip a global lookup per call (slow where code
// runs in a vm context, as under Jest).
const { exp, floor, log, min, round } = Math;

// Salts of a run's independent random streams (the run-level offsets use salt 0, sensor k's
// sample noise salt k + 1, as before these were added).
const SALT_DURATION = 0xd0e5;
const SALT_DITHER = 0xd17e;
const SALT_GLITCH = 0x911c;
const SALT_LOOP = 0x100b;

/** Nominal samples per SVID of one run of `ch` (a run's own length varies slightly: see {@link runLayout}). */
export function samplesPerRun(ch: ChamberSpec): number {
  return Math.round(ch.collectionFreqHz * ch.contextDurationSeconds);
}

/** Nominal start index of each recipe step in a run of `n` samples. */
export function stepStarts(ch: ChamberSpec, n: number): number[] {
  const out: number[] = [];
  let acc = 0;
  for (const s of ch.recipe.steps) {
    out.push(Math.min(n - 1, Math.round(acc * n)));
    acc += s.fraction;
  }
  return out;
}

/** Value of setpoint/state `j` (0-based among the non-sensor SVIDs) in step `s`: constant per step. */
export function setpointValue(ch: ChamberSpec, j: number, s: number): number {
  const u = rng(mix(ch.seed, 0x5e7, j));
  const isState = j % 3 === 2;
  const base = isState ? 1 : Math.round(10 ** (u() * 3) * 10) / 10;
  const v = rng(mix(ch.seed, 0x5e7, j, s + 1))();
  if (isState) return v < 0.5 ? 0 : 1;
  return Math.round(base * ([0, 0.5, 1, 1, 1.5][Math.floor(v * 5)] ?? 1) * 10) / 10;
}

/**
 * One change an excursion makes to a sensor in a run. `step` names a recipe step (absent: the whole
 * run). Offsets and heights are in the sensor's unit.
 * - `offset`: added to the level (of one step: that step's level, so the transients follow it);
 * - `noise`: factor on the within-run noise;
 * - `pulse`: `height` added to `seconds` of consecutive samples inside the step, after its settling;
 *   `at` in [0, 1) places it;
 * - `dropout`: those samples fall toward zero, `x (1 - depth)`;
 * - `overshoot`: `extra` added to the step response's overshoot (a fraction of the step change);
 * - `settle`: factor on the step response's time scale (slower settling);
 * - `ramp`: factor on a ramp step's rate (< 1: slower, the ramp ends short of the level);
 * - `stretch`: the step lasts `seconds` longer, later steps start later. It changes the run's
 *   layout, so it acts on every SVID whichever sensor it is listed under.
 */
export type Effect =
  | { readonly kind: 'offset'; readonly value: number; readonly step?: string }
  | { readonly kind: 'noise'; readonly factor: number; readonly step?: string }
  | { readonly kind: 'pulse'; readonly step: string; readonly height: number; readonly seconds: number; readonly at: number }
  | { readonly kind: 'dropout'; readonly step: string; readonly depth: number; readonly seconds: number; readonly at: number }
  | { readonly kind: 'overshoot'; readonly step: string; readonly extra: number }
  | { readonly kind: 'settle'; readonly step: string; readonly factor: number }
  | { readonly kind: 'ramp'; readonly step: string; readonly factor: number }
  | { readonly kind: 'stretch'; readonly step: string; readonly seconds: number };

/** What excursions do to one run: effects by sensor SVID name (absent: none). */
export type RunEffects = ReadonlyMap<string, readonly Effect[]>;

export interface RunContext {
  readonly runId: string;
  /** 0-based run index of the chamber. */
  readonly runIndex: number;
  /** Start of the context, epoch seconds. */
  readonly startSeconds: number;
  /** Excursion effects by sensor name (see `effectsFor`). */
  readonly effects?: RunEffects;
  /**
   * Where the samples of SVID `svid` (its index in the chamber) go, `length` of them (default: a new
   * array each run). A caller that reuses buffers, as a defender's trace pool does, passes them here; the
   * trace holds the arrays returned, every element written.
   */
  readonly allocate?: (svid: number, length: number) => Float32Array;
}

/** The samples of a run and where its steps start (endpoint-controlled steps vary from run to run). */
export interface RunLayout {
  /** Samples per SVID. */
  readonly n: number;
  /** Start index of each recipe step, in recipe order. */
  readonly starts: readonly number[];
}

/**
 * The layout of run `runIndex`: the nominal step lengths, each endpoint-controlled step's length
 * varied by its `durationSd` (a gaussian draw of the run), plus any `stretch` effect (dithered to whole
 * samples so the mean stretch is exact). A deterministic function of (chamber, run, effects).
 */
export function runLayout(ch: ChamberSpec, runIndex: number, effects?: RunEffects): RunLayout {
  const n0 = samplesPerRun(ch);
  const nominal = stepStarts(ch, n0);
  const steps = ch.recipe.steps;
  const starts: number[] = [];
  let g: Gaussian | undefined;
  let at = 0;
  for (let s = 0; s < steps.length; s++) {
    const step = steps[s];
    let len = (nominal[s + 1] ?? n0) - (nominal[s] ?? 0);
    const sd = step?.durationSd ?? 0;
    if (sd > 0 && len > 0) {
      g ??= new Gaussian(rng(mix(ch.seed, runIndex, SALT_DURATION)));
      len = Math.max(1, Math.round(len * (1 + sd * g.next())));
    }
    if (effects && step) {
      let extra = 0;
      for (const fx of effects.values()) for (const e of fx) if (e.kind === 'stretch' && e.step === step.name) extra += e.seconds;
      if (extra !== 0) len = Math.max(1, len + Math.floor(extra * ch.collectionFreqHz + rng(mix(ch.seed, runIndex, SALT_DITHER, s))()));
    }
    starts.push(at);
    at += len;
  }
  return { n: at, starts };
}

/**
 * Run-level offset of every sensor (sensor units): its independent run-to-run draw (the correlated
 * pair's second sensor mixes in the first's: correlation `pairCorrelation`), plus with `slow` the PM
 * ageing and wander of the run.
 */
function runOffsets(ch: ChamberSpec, runIndex: number, slow: boolean): Float64Array {
  const g = runGaussian(ch, runIndex);
  const z = new Float64Array(ch.sensors.length);
  for (let k = 0; k < z.length; k++) z[k] = g.next();
  const pair = ch.correlatedPair;
  if (pair) {
    const a = ch.sensors.findIndex((s) => s.name === pair[0]);
    const b = ch.sensors.findIndex((s) => s.name === pair[1]);
    const rho = ch.pairCorrelation ?? 0;
    if (a >= 0 && b >= 0) z[b] = rho * (z[a] as number) + Math.sqrt(1 - rho * rho) * (z[b] as number);
  }
  const loops = ch.equipment?.loops ?? [];
  loops.forEach((loop, l) => {
    // The loop's common in-control factor (plasma load, chamber conductance) from its own stream, so
    // the sensors' own draws above stay as they are.
    const common = runGaussian(ch, runIndex, mix(SALT_LOOP, l)).next();
    const rho = LOOP_FACTOR_CORRELATION;
    loop.reacting.forEach((name, i) => {
      const k = ch.sensors.findIndex((s) => s.name === name);
      const a = loop.inControl[i] ?? 0;
      if (k >= 0) z[k] = rho * a * common + Math.sqrt(1 - rho * rho * a * a) * (z[k] as number);
    });
  });
  for (let k = 0; k < z.length; k++) {
    const s = ch.sensors[k];
    if (!s) continue;
    const events = slow && ch.equipment ? eventLevelSigmas(ch, s.name, runIndex) : 0;
    z[k] = s.runSigma * ((z[k] as number) + (slow ? slowLevelSigmas(ch, k, runIndex) + events : 0));
  }
  return z;
}

/** Index of the recipe step called `name` (-1 when the recipe has none). */
function stepIndex(ch: ChamberSpec, name: string): number {
  return ch.recipe.steps.findIndex((s) => s.name === name);
}

/**
 * Fills `out` (length `layout.n`) with sensor `k`'s samples of a run: per step its level (a ramp, or
 * a damped second-order response from where the previous step ended), the run offset, the sample
 * noise of its kind, the excursion effects, normal glitches, and the quantisation last (as an A/D
 * converter would). Allocates nothing per sample.
 */
function fillSensor(
  ch: ChamberSpec,
  k: number,
  layout: RunLayout,
  runIndex: number,
  offset: number,
  fx: readonly Effect[] | undefined,
  out: Float32Array,
  end = layout.n,
): void {
  const sensor = ch.sensors[k];
  if (!sensor) return;
  const f = ch.collectionFreqHz;
  const total = layout.n;
  // Samples [0, n) are filled: calibration needs no more than its target step's (the random
  // streams are sequential, so those samples are the same as in the whole run).
  const n = min(end, total);
  const steps = ch.recipe.steps;
  const nSteps = steps.length;
  let runOffset = offset;
  let runNoise = 1;
  let stepOffset: Float64Array | undefined;
  let stepNoise: Float64Array | undefined;
  let stepExtraOvershoot: Float64Array | undefined;
  let stepSettle: Float64Array | undefined;
  let stepRamp: Float64Array | undefined;
  const ones = () => new Float64Array(nSteps).fill(1);
  if (fx) {
    for (const e of fx) {
      const s = 'step' in e && e.step !== undefined ? stepIndex(ch, e.step) : -1;
      if ('step' in e && e.step !== undefined && s < 0) continue;
      switch (e.kind) {
        case 'offset':
          if (s < 0) runOffset += e.value;
          else (stepOffset ??= new Float64Array(nSteps))[s] += e.value;
          break;
        case 'noise':
          if (s < 0) runNoise *= e.factor;
          else (stepNoise ??= ones())[s] *= e.factor;
          break;
        case 'overshoot':
          (stepExtraOvershoot ??= new Float64Array(nSteps))[s] += e.extra;
          break;
        case 'settle':
          (stepSettle ??= ones())[s] *= e.factor;
          break;
        case 'ramp':
          (stepRamp ??= ones())[s] *= e.factor;
          break;
        default:
          // pulse and dropout come after the base signal; stretch is in the layout.
          break;
      }
    }
  }

  // First the standardised sample noise of the whole run (one draw per sample, in order, as the
  // correlated pair's partner draws its own), then the signal around it.
  const noise = runGaussian(ch, runIndex, k + 1);
  const pair = ch.correlatedPair;
  const partnerIndex = pair && pair[1] === sensor.name ? ch.sensors.findIndex((x) => x.name === pair[0]) : -1;
  if (partnerIndex >= 0) {
    // The pair's common factor acts within the run too: the second sensor's noise mixes in the first's.
    const partner = runGaussian(ch, runIndex, partnerIndex + 1);
    const rho = ch.pairCorrelation ?? 0;
    const rest = Math.sqrt(1 - rho * rho);
    for (let i = 0; i < n; i++) out[i] = rho * partner.next() + rest * noise.next();
  } else {
    for (let i = 0; i < n; i++) out[i] = noise.next();
  }
  const a = Math.abs(sensor.skew ?? 0);
  if (sensor.noiseKind === 'skewed' && a > 0) {
    const sign = (sensor.skew ?? 0) < 0 ? -1 : 1;
    // Centred, unit-variance lognormal: (e^(a z) - e^(a^2/2)) / sqrt((e^(a^2) - 1) e^(a^2)).
    const lnMean = Math.exp((a * a) / 2);
    const lnSd = Math.sqrt((Math.exp(a * a) - 1) * Math.exp(a * a));
    for (let i = 0; i < n; i++) out[i] = (sign * (exp(a * (out[i] as number)) - lnMean)) / lnSd;
  }

  const zeta0 = sensor.damping;
  const omega0 = 1 / (zeta0 * sensor.settleSeconds);
  const overshoot0 = Math.exp((-Math.PI * zeta0) / Math.sqrt(1 - zeta0 * zeta0));
  // The tool idles between runs where the last step left it: a first ramp step starts there.
  let prevEnd = steps[0]?.ramp ? (sensor.stepLevels[nSteps - 1] ?? 0) : (sensor.stepLevels[0] ?? 0);
  for (let s = 0; s < nSteps; s++) {
    const from = layout.starts[s] ?? total;
    const stepEnd = layout.starts[s + 1] ?? total;
    const len = stepEnd - from;
    if (from >= n) break;
    if (len <= 0) continue;
    const to = min(stepEnd, n);
    const level = (sensor.stepLevels[s] ?? 0) + (stepOffset?.[s] ?? 0);
    const ns = sensor.noiseSigma * runNoise * (stepNoise?.[s] ?? 1);
    if (steps[s]?.ramp) {
      const rate = stepRamp?.[s] ?? 1;
      const start = prevEnd;
      const d = level - start;
      for (let i = from; i < to; i++) {
        const frac = min(1, (rate * (i - from + 1)) / len);
        out[i] = start + d * frac + runOffset + ns * (out[i] as number);
      }
      prevEnd = start + d * Math.min(1, rate);
      continue;
    }
    const jump = prevEnd - level;
    let zeta = zeta0;
    let omega = omega0;
    const extra = stepExtraOvershoot?.[s] ?? 0;
    if (extra !== 0) {
      const os = Math.min(0.95, Math.max(1e-6, overshoot0 + extra));
      const l = Math.log(os);
      zeta = -l / Math.sqrt(Math.PI * Math.PI + l * l);
    }
    omega /= stepSettle?.[s] ?? 1;
    const tau = 1 / (zeta * omega);
    const wd = omega * Math.sqrt(1 - zeta * zeta);
    const c = zeta / Math.sqrt(1 - zeta * zeta);
    // The response is flat once its envelope is below a thousandth of the sample noise.
    const envelope = Math.abs(jump) * (1 + c);
    const settled = envelope > 0 ? tau * Math.log(envelope / (1e-3 * Math.max(sensor.noiseSigma, 1e-12))) : 0;
    const transientEnd = settled > 0 ? Math.min(to, from + Math.ceil(settled * f)) : from;
    // e^(-t/tau) (cos wd t + i sin wd t), advanced by one rotation per sample instead of exp/cos/sin.
    const dt = 1 / f;
    const stepRe = Math.exp(-dt / tau) * Math.cos(wd * dt);
    const stepIm = Math.exp(-dt / tau) * Math.sin(wd * dt);
    let re = 1;
    let im = 0;
    let det = level;
    for (let i = from; i < transientEnd; i++) {
      det = level + jump * (re + c * im);
      out[i] = det + runOffset + ns * (out[i] as number);
      const nextRe = re * stepRe - im * stepIm;
      im = re * stepIm + im * stepRe;
      re = nextRe;
    }
    if (transientEnd < to) det = level;
    const base = level + runOffset;
    for (let i = transientEnd; i < to; i++) out[i] = base + ns * (out[i] as number);
    prevEnd = det;
  }

  if (fx) {
    for (const e of fx) {
      if (e.kind !== 'pulse' && e.kind !== 'dropout') continue;
      const s = stepIndex(ch, e.step);
      if (s < 0) continue;
      const from = layout.starts[s] ?? total;
      const to = layout.starts[s + 1] ?? total;
      const len = to - from;
      if (len <= 0) continue;
      const m = Math.min(len, Math.max(1, Math.round(e.seconds * f)));
      // Inside the step, after its settling where the step is long enough.
      const margin = Math.max(0, Math.min(Math.floor((len - m) / 2), Math.ceil(3 * sensor.settleSeconds * f)));
      const room = len - margin - m;
      const p = from + margin + Math.min(Math.max(0, room), Math.floor(e.at * (room + 1)));
      for (let i = p; i < min(p + m, n); i++) {
        const x = out[i] as number;
        out[i] = e.kind === 'pulse' ? x + e.height : x * (1 - e.depth);
      }
    }
  }

  if (sensor.glitchRate > 0) {
    const u = rng(mix(ch.seed, runIndex, SALT_GLITCH, k));
    const lnq = Math.log(1 - sensor.glitchRate);
    // Gaps between glitches are geometric: one draw per glitch, not per sample.
    for (let i = floor(log(1 - u()) / lnq); i < n; i += 1 + floor(log(1 - u()) / lnq)) {
      const amp = (4 + 4 * u()) * sensor.noiseSigma;
      out[i] = (out[i] as number) + (u() < 0.5 ? -amp : amp);
    }
  }

  const res = sensor.noiseKind === 'quantised' ? (sensor.resolution ?? 0) : 0;
  if (res > 0) for (let i = 0; i < n; i++) out[i] = round((out[i] as number) / res) * res;
  const range = sensor.range;
  if (range) {
    const [lo, hi] = range;
    for (let i = 0; i < n; i++) out[i] = min(hi, Math.max(lo, out[i] as number));
  }
}

const setpointCache = new WeakMap<ChamberSpec, Float64Array>();

/** Setpoint/state values of a chamber, `[j * steps + s]` (computed once per chamber). */
function setpoints(ch: ChamberSpec): Float64Array {
  let v = setpointCache.get(ch);
  if (v) return v;
  const nSteps = ch.recipe.steps.length;
  const count = Math.max(0, ch.svidCount - ch.sensors.length);
  v = new Float64Array(count * nSteps);
  for (let j = 0; j < count; j++) for (let s = 0; s < nSteps; s++) v[j * nSteps + s] = setpointValue(ch, j, s);
  setpointCache.set(ch, v);
  return v;
}

/**
 * Synthesises only sensors `ks` of a run (for calibration): their samples and the run's layout.
 * With `slow` false the PM ageing and wander are held at zero (they only add a constant to a run),
 * so runs differ by their run-to-run and sample draws alone: the spread at a fixed tool age. With
 * `throughStep` only the samples up to that step's end are filled (the rest stay 0): they are the
 * same as in the whole run.
 */
export function synthesizeSensors(
  ch: ChamberSpec,
  runIndex: number,
  effects: RunEffects | undefined,
  ks: readonly number[],
  slow: boolean,
  throughStep?: number,
): { layout: RunLayout; arrays: Float32Array[] } {
  const layout = runLayout(ch, runIndex, effects);
  const end = throughStep === undefined ? layout.n : (layout.starts[throughStep + 1] ?? layout.n);
  const offsets = runOffsets(ch, runIndex, slow);
  const arrays = ks.map((k) => {
    const a = new Float32Array(layout.n);
    const name = ch.sensors[k]?.name;
    fillSensor(ch, k, layout, runIndex, offsets[k] ?? 0, name === undefined ? undefined : effects?.get(name), a, end);
    return a;
  });
  return { layout, arrays };
}

/**
 * One run's trace (T-chart) as the data-collection layer stores it: Float32 samples at the
 * chamber's rate over its context, sensors first, then setpoints and states (constant per step).
 *
 * A sensor's samples: per recipe step its level, reached by a linear ramp (ramp steps) or a damped
 * second-order response with a small overshoot (other steps) from where the previous step ended; a
 * run-level offset (independent run-to-run draw, correlated between the chamber's correlated pair,
 * plus PM ageing and a slow wander, both functions of the run index); sample noise of the sensor's
 * kind (gaussian, skewed, or quantised to its resolution); rare single-sample glitches. Endpoint
 * steps vary in length, so the run's length and step markers vary slightly ({@link runLayout}).
 * Deterministic per (chamber, run index, effects); no state carries from run to run.
 */
export function synthesizeTrace(ch: ChamberSpec, run: RunContext): TraceRecord {
  const layout = runLayout(ch, run.runIndex, run.effects);
  const n = layout.n;
  const steps: TraceStep[] = ch.recipe.steps.map((s, i) => ({ name: s.name, startIndex: layout.starts[i] ?? 0 }));
  const offsets = runOffsets(ch, run.runIndex, true);
  const svids = new Map<string, Float32Array>();
  const allocate = run.allocate ?? ((_svid: number, length: number) => new Float32Array(length));
  for (let k = 0; k < ch.sensors.length; k++) {
    const sensor = ch.sensors[k];
    if (!sensor) continue;
    const a = allocate(k, n);
    fillSensor(ch, k, layout, run.runIndex, offsets[k] ?? 0, run.effects?.get(sensor.name), a);
    svids.set(sensor.name, a);
  }
  const sp = setpoints(ch);
  const nSteps = ch.recipe.steps.length;
  for (let i = ch.sensors.length; i < ch.svidCount; i++) {
    const j = i - ch.sensors.length;
    const a = allocate(i, n);
    if (run.allocate) a.fill(0);
    for (let s = 0; s < nSteps; s++) a.fill(sp[j * nSteps + s] ?? 0, layout.starts[s] ?? n, layout.starts[s + 1] ?? n);
    svids.set(svidName(ch, i), a);
  }
  return {
    toolId: ch.toolId,
    chamberId: ch.chamberId,
    runId: run.runId,
    timing: { kind: 'regular', startSeconds: run.startSeconds, frequencyHz: ch.collectionFreqHz },
    svids,
    steps,
    recipe: ch.recipe.name,
  };
}
