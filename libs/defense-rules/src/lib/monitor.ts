/**
 * Chamber monitoring: every SVID x window x statistic of a run as one indicator vector, judged as a
 * whole against a model fitted on the chamber's Phase I runs, under one false-alarm budget
 * (docs/adr/0005-chamber-monitor.md has the measurements behind each choice).
 *
 * - Windows: every recipe step of the trace, or `segments` equal time windows when it has no step
 *   markers; statistics per window ({@link DEFAULT_MONITOR_STATISTICS} by default) of the samples
 *   after a running median of 3 (`despike`: single-sample glitches are normal on real sensors and
 *   would otherwise own the extremes and the spread), so faults that change a trace's shape move an
 *   indicator.
 * - Phase I: `baseline.minRuns` runs. Indicators whose spread is at numerical noise level (exactly
 *   constant, or a spread below 1e-7 of their magnitude) are not charted — a value that changes
 *   later is a violation of its own (`CONSTANT`), the way a setpoint changing mid-recipe is.
 * - Charts, all from the same Phase I: Hotelling T² on at most `pca.maxComponents` principal
 *   components of the autoscaled indicators and the SPE (Q) of the residual (each limit the larger of
 *   the distribution-theory one and the leave-one-out calibrated one), optionally a MEWMA on the
 *   standardised scores, and per indicator a raw and a residual limit (prediction limits for a new
 *   run, which account for a short Phase I).
 * - Lattice sensors (issue 49, item 4): a sensor whose readings lie on a lattice (whole counts, 0/1, a
 *   state), learnt in Phase I from its order statistics or declared in the strategy (`resolution`),
 *   has each indicator's sd floored at what one count does to it (lattice.ts), so one count is at
 *   most one sd; a constant indicator of it may move one count (an order statistic) or half a count
 *   (any other); a sensor with fewer than FEW_LEVELS levels is charted as attributes: its indicators
 *   alone, out of the PCA, around their Phase I centre.
 * - Centre: slow in-control drift (ageing between maintenances) is followed by an EWMA of each SVID's
 *   level offset over the runs that raised no alarm (`adapt`, level-centre.ts); the covariance stays
 *   that of Phase I.
 * - Budget: the strategy's in-control ARL for an alarm (default 370 runs) is split evenly over the
 *   enabled charts; within the univariate family, half to the raw and half to the residual limits,
 *   each family's width the larger of Bonferroni and its Phase I calibration (family-limits.ts), so the chamber
 *   as a whole — not each chart — meets it.
 *
 * Pure and deterministic; the model is plain JSON (stored as a limit set).
 */
import {
  chiSquareQuantile,
  DegenerateBaselineError,
  STATISTICS,
  type IndicatorCalculator,
  fitPcaModel,
  PERCENTILE_STATISTICS,
  SHAPE_STATISTICS,
  windowValue,
  type WindowStatistics,
  fQuantile,
  InsufficientBaselineError,
  fitTail,
  scorePca,
  type PcaModel,
  type StatisticName,
  type Trace,
  type WindowSpec,
} from '@defender/uchart';
import { calibratedFamilyWidth, leaveOneOutMaxima } from './family-limits';
import { FEW_LEVELS, fewLevelStep, indicatorStep, learnLattice, type Lattice } from './lattice';

/**
 * A monitored statistic: one of the uchart statistics, the difference `a-b` of two of them over the
 * window (a derived indicator such as `max-mean`, the peak above the window's level), or `a-run_b`,
 * statistic a of the window minus statistic b of the whole run of the same SVID (a within-run
 * contrast such as `mean-run_mean`, the window's level against the run's).
 */
export type MonitorStatistic = StatisticName | `${StatisticName}-${StatisticName}` | `${StatisticName}-run_${StatisticName}`;

/** Prefix of the second part of `a-run_b`: statistic b over the whole run (the context window). */
const RUN_PREFIX = 'run_';

/**
 * The statistics a monitor computes per SVID and window unless told otherwise: the level (`mean`), the
 * within-run noise from successive differences (`noise`, blind to ramps and settling shapes, where
 * `std` is not), the peak and the trough of a 5 s moving average above and below the level
 * (`ma_max-mean`, `ma_min-mean`: a pulse or dropout of a few seconds moves them by many of their
 * sds, and taking the level out removes the run-to-run level variation that dominates a smoothed
 * extreme), the slope, robust extremes (`p05`, `p95`), the integral, the duration, and the window's
 * level against the run's (`mean-run_mean`: a run-to-run level offset of a sensor moves the whole run,
 * so the contrast carries none of it and a step-level fault stands out; decision 14). Measured on
 * bench:detection against the earlier mean, std, min, max, slope, first, last, p05, p95, integral,
 * duration: more excursions caught at no more false alarms; raw min / max / first / last, whose
 * extreme-value tails spent the budget, and std are left out (docs/adr/0005-chamber-monitor.md,
 * decision 9). Any uchart statistic, or the difference `a-b` of two, can be listed instead.
 */
export const DEFAULT_MONITOR_STATISTICS: readonly MonitorStatistic[] = [
  'mean',
  'noise',
  'ma_min-mean',
  'ma_max-mean',
  'slope',
  'p05',
  'p95',
  'integral',
  'duration',
  'mean-run_mean',
];

const STATISTIC_SET: ReadonlySet<string> = new Set(STATISTICS);

/** The uchart statistics a monitored statistic is made of, or undefined when it is not one. */
export function statisticParts(s: string): readonly [StatisticName] | readonly [StatisticName, StatisticName] | undefined {
  if (STATISTIC_SET.has(s)) return [s as StatisticName];
  const dash = s.indexOf('-');
  if (dash <= 0) return undefined;
  const a = s.slice(0, dash);
  const b = s.slice(dash + 1);
  if (b.startsWith(RUN_PREFIX)) {
    const whole = b.slice(RUN_PREFIX.length);
    return STATISTIC_SET.has(a) && STATISTIC_SET.has(whole) ? [a as StatisticName, whole as StatisticName] : undefined;
  }
  return STATISTIC_SET.has(a) && STATISTIC_SET.has(b) && a !== b ? [a as StatisticName, b as StatisticName] : undefined;
}

/** Whether a monitored statistic's second part is taken over the whole run (`a-run_b`). */
export function isRunContrast(s: string): boolean {
  const dash = s.indexOf('-');
  return dash > 0 && s.startsWith(RUN_PREFIX, dash + 1);
}

/** A strategy's monitor, with every default applied. */
export interface MonitorConfig {
  /** `*` for every SVID of the trace, or the SVIDs to monitor. */
  readonly svids: '*' | readonly string[];
  /** `steps`: every recipe step (equal segments without step markers); `context`: the whole trace only. */
  readonly windows: 'steps' | 'context';
  /** Equal time windows of a trace without step markers. */
  readonly segments: number;
  readonly statistics: readonly MonitorStatistic[];
  /** Statistics of the samples after a running median of 3, which removes single-sample glitches. */
  readonly despike: boolean;
  /**
   * Phase I: `minRuns` runs; then, once `extendTo` runs without an alarm exist (Phase I included), the
   * model is fitted again on them (a new version), or never (`false`).
   */
  readonly baseline: { readonly minRuns: number; readonly extendTo: number | false };
  /**
   * Slow in-control drift (tool ageing between maintenances) followed by an EWMA of each SVID's level
   * offset over the runs that raised no alarm (weight `lambda` per run; level-centre.ts), or off (the
   * Phase I mean stays the centre).
   */
  readonly adapt: { readonly lambda: number } | false;
  /** Univariate limits per indicator (a share of the budget). */
  readonly univariate: boolean;
  /** PCA: components explaining `variance` of the autoscaled Phase I, at most `maxComponents`. */
  readonly pca: { readonly variance: number; readonly maxComponents: number };
  /** MEWMA on the standardised PCA scores, or off. */
  readonly mewma: { readonly lambda: number } | false;
  readonly action: 'ALARM' | 'HOLD_CHAMBER';
  /**
   * Declared resolution (one count, in the SVID's unit, > 0) per SVID; an SVID not listed has its
   * lattice learnt in Phase I (lattice.ts), or none. See {@link fitMonitorModel}.
   */
  readonly resolution?: Readonly<Record<string, number>>;
}

/** The false-alarm budget of a chamber: in-control ARL of an alarm (runs). */
export interface Budget {
  readonly alarmArl: number;
}

/** History key of the monitor model's own point (T², SPE, MEWMA state) and of its limit set. */
export const MONITOR_MODEL_KEY = 'm:model';

/**
 * What the history keys of one SVID window's indicators start with: `monitorKey` is this and the
 * statistic (a statistic name holds no `:`). Built once per window where a run builds many keys.
 */
export function monitorGroup(svid: string, window: string): string {
  return `m/${svid}@${window}:`;
}

/** History key of one monitored indicator. */
export function monitorKey(svid: string, window: string, statistic: MonitorStatistic): string {
  return monitorGroup(svid, window) + statistic;
}

/** One indicator of the monitor for a trace. */
export interface MonitorSpec {
  readonly key: string;
  readonly svid: string;
  /** Step name, `seg<i>of<n>`, or `context`. */
  readonly windowName: string;
  readonly window: WindowSpec;
  readonly statistic: MonitorStatistic;
  readonly filter?: 'median3';
}

/** The SVIDs and windows the monitor reads of a trace; its indicators are every SVID x window x statistic. */
export interface MonitorLayout {
  readonly svids: readonly string[];
  /** Window name (step name, `seg<i>of<n>` or `context`) and its spec, in the trace's order. */
  readonly windows: readonly { readonly name: string; readonly window: WindowSpec }[];
}

/** The SVIDs and windows of a trace under `cfg` (see {@link monitorSpecs}). */
export function monitorLayout(trace: Trace, cfg: MonitorConfig): MonitorLayout {
  const svids = cfg.svids === '*' ? [...trace.svids.keys()] : cfg.svids;
  const windows: { name: string; window: WindowSpec }[] = [];
  if (cfg.windows === 'context') windows.push({ name: 'context', window: { kind: 'context' } });
  else if (trace.steps.length > 0) {
    for (const s of trace.steps) windows.push({ name: s.name, window: { kind: 'step', step: s.name } });
  } else {
    for (let i = 0; i < cfg.segments; i++)
      windows.push({ name: `seg${i + 1}of${cfg.segments}`, window: { kind: 'segment', index: i, of: cfg.segments } });
  }
  return { svids, windows };
}

/** The monitor's indicators for a trace, in a stable order (SVID, window, statistic). */
export function monitorSpecs(trace: Trace, cfg: MonitorConfig): MonitorSpec[] {
  const { svids, windows } = monitorLayout(trace, cfg);
  const out: MonitorSpec[] = [];
  for (const svid of svids)
    for (const w of windows)
      for (const statistic of cfg.statistics)
        out.push({
          key: monitorKey(svid, w.name, statistic),
          svid,
          windowName: w.name,
          window: w.window,
          statistic,
          ...(cfg.despike ? { filter: 'median3' as const } : {}),
        });
  return out;
}

/** The window of the run-level part of a contrast (`a-run_b`). */
const RUN_WINDOW: WindowSpec = { kind: 'context' };
const RUN_WINDOW_NAME = 'context';
const PERCENTILE_SET: ReadonlySet<string> = new Set(PERCENTILE_STATISTICS);
const SHAPE_SET: ReadonlySet<string> = new Set(SHAPE_STATISTICS);
/** A statistic's parts (see {@link statisticParts}, {@link isRunContrast}), remembered in `seen` (a call's own memo: a strategy has a handful). */
function partsOf(statistic: string, seen: Map<string, { readonly parts: readonly StatisticName[]; readonly run: boolean }>): { readonly parts: readonly StatisticName[]; readonly run: boolean } {
  let p = seen.get(statistic);
  if (!p) {
    const parts = statisticParts(statistic);
    if (!parts) throw new RangeError(`unknown monitor statistic ${statistic}`);
    p = { parts, run: isRunContrast(statistic) };
    seen.set(statistic, p);
  }
  return p;
}

/**
 * The values of `specs` for a trace (undefined where the trace gives none: unknown SVID or step, empty
 * window, no valid sample, ...). Each (SVID, window) is read once for all its statistics (windows are
 * told apart by SVID and window name), derived statistics are taken from their parts, and nothing is
 * allocated per indicator beyond the result: a chamber of a hundred sensors has thousands of them.
 */
export function monitorValues(trace: Trace, specs: readonly MonitorSpec[], calculator: IndicatorCalculator): (number | undefined)[] {
  const requests: { svid: string; window: WindowSpec; filter?: 'median3'; percentiles: boolean; shape: boolean }[] = [];
  const bySvid = new Map<string, Map<string, number>>();
  const seen = new Map<string, { readonly parts: readonly StatisticName[]; readonly run: boolean }>();
  const windowOf = (svid: string, name: string, window: WindowSpec, filter: 'median3' | undefined, statistic: StatisticName): number => {
    let windows = bySvid.get(svid);
    if (!windows) bySvid.set(svid, (windows = new Map()));
    let i = windows.get(name);
    if (i === undefined) {
      i = requests.length;
      windows.set(name, i);
      requests.push({ svid, window, ...(filter ? { filter } : {}), percentiles: false, shape: false });
    }
    const r = requests[i] as (typeof requests)[number];
    if (PERCENTILE_SET.has(statistic)) r.percentiles = true;
    else if (SHAPE_SET.has(statistic)) r.shape = true;
    return i;
  };
  const n = specs.length;
  // Per spec: the window and statistic of its value, and of the part subtracted from it (-1: none).
  const firstWindow = new Int32Array(n);
  const secondWindow = new Int32Array(n).fill(-1);
  const firstStatistic: StatisticName[] = new Array(n);
  const secondStatistic: StatisticName[] = new Array(n);
  for (let k = 0; k < n; k++) {
    const spec = specs[k] as MonitorSpec;
    const { parts, run } = partsOf(spec.statistic, seen);
    const a = parts[0] as StatisticName;
    firstWindow[k] = windowOf(spec.svid, spec.windowName, spec.window, spec.filter, a);
    firstStatistic[k] = a;
    if (parts.length === 2) {
      const b = parts[1] as StatisticName;
      secondWindow[k] = run
        ? windowOf(spec.svid, RUN_WINDOW_NAME, RUN_WINDOW, spec.filter, b)
        : windowOf(spec.svid, spec.windowName, spec.window, spec.filter, b);
      secondStatistic[k] = b;
    }
  }
  const windows = calculator.computeWindows(trace, requests);
  const out: (number | undefined)[] = new Array(n);
  for (let k = 0; k < n; k++) {
    const a = windowValue(windows[firstWindow[k] as number] as WindowStatistics, firstStatistic[k] as StatisticName);
    const second = secondWindow[k] as number;
    if (second < 0 || a === undefined) {
      out[k] = a;
      continue;
    }
    const b = windowValue(windows[second] as WindowStatistics, secondStatistic[k] as StatisticName);
    out[k] = b === undefined ? undefined : a - b;
  }
  return out;
}

/** An indicator left out of the charts, and why. */
export interface NotCharted {
  readonly key: string;
  readonly reason: 'constant' | 'numerical-noise' | 'missing';
  /** The Phase I value of a constant indicator (checked on every run). */
  readonly value?: number;
  /**
   * How far a constant indicator of a lattice sensor may move before it is a violation (absent: a
   * change beyond numerical noise is one). One count of an order statistic, half a count of any
   * other statistic: a window mean moves by half a count only when half the window changed level.
   */
  readonly tolerance?: number;
}

/** A sensor's lattice as the model keeps it: learnt in Phase I or declared in the strategy. */
export interface SvidLattice extends Lattice {
  readonly source: 'learnt' | 'declared';
}

/** The fitted monitor of a chamber and recipe (plain JSON). */
export interface MonitorModel {
  readonly kind: 'monitor';
  readonly version: number;
  readonly baselineRunIds: readonly string[];
  /** Charted indicators, in the order of `center`, `scale` and the PCA model's variables. */
  readonly variables: readonly string[];
  readonly center: readonly number[];
  readonly scale: readonly number[];
  readonly notCharted: readonly NotCharted[];
  /** Per chart: its share of the alarm probability per run. */
  readonly alpha: { readonly univariate: number; readonly t2: number; readonly spe: number; readonly mewma: number };
  /** Univariate half-width in Phase I sds (0: no univariate limits). */
  readonly univariateWidth: number;
  readonly pca: PcaModel | null;
  /**
   * Univariate limits on each indicator's PCA residual (what the other indicators do not explain):
   * half-width in residual sds, and the residual sd per indicator (by key), estimated out of sample.
   */
  readonly residual: { readonly width: number; readonly scale: Readonly<Record<string, number>> } | null;
  readonly mewma: { readonly lambda: number; readonly limit: number; readonly scoreScale: readonly number[] } | null;
  /**
   * Lattice sensors by SVID (issue 49, item 4; absent in models fitted before: no sensor is treated
   * as one). Their indicators' `scale` is floored at what one count does to them.
   */
  readonly lattices?: Readonly<Record<string, SvidLattice>>;
  /**
   * Charted indicators of few-level sensors (a lattice of fewer than `FEW_LEVELS` levels in Phase I,
   * lattice.ts: binary, state, a gauge a few counts wide): charted alone (raw limits at the floored
   * scale, a fixed centre), not in the PCA (absent: none).
   */
  readonly attributes?: readonly string[];
}

/** Why a model could not be fitted (Phase I keeps collecting). */
export class MonitorBaselineError extends Error {
  override readonly name = 'MonitorBaselineError';
}

const CONSTANT_TOLERANCE = 1e-7;

function spreadIsNoise(mean: number, sd: number): boolean {
  return !(sd > CONSTANT_TOLERANCE * Math.max(Math.abs(mean), Number.MIN_VALUE) && sd > 0);
}

/** Two-sided Student-t quantile from the F distribution: t(1 - a/2; nu)^2 = F(1 - a; 1, nu). */
function tTwoSided(alpha: number, nu: number): number {
  return Math.sqrt(fQuantile(1 - alpha, 1, nu));
}

/**
 * Fits the monitor on Phase I: `rows[i][j]` is indicator `keys[j]` of run `runIds[i]` (NaN: missing).
 *
 * @throws {@link MonitorBaselineError} when fewer than `minRuns` runs or no chartable indicator.
 */
export function fitMonitorModel(
  rows: readonly (readonly number[])[],
  keys: readonly string[],
  runIds: readonly string[],
  cfg: MonitorConfig,
  budget: Budget,
  version = 1,
): MonitorModel {
  const n = rows.length;
  if (n < cfg.baseline.minRuns) throw new MonitorBaselineError(`${n} Phase I runs, ${cfg.baseline.minRuns} needed`);
  const notCharted: NotCharted[] = [];
  const variables: string[] = [];
  const columns: number[] = [];
  const center: number[] = [];
  const scale: number[] = [];
  // Lattice sensors: each indicator's sd floored at what one count does to it (`floors`, 0: none);
  // the indicators of a sensor with fewer than FEW_LEVELS levels are charted alone (`attributes`).
  const parts = keys.map(monitorKeyParts);
  const lattices = svidLattices(rows, parts, cfg.resolution);
  const floors: number[] = [];
  const attributes: string[] = [];
  keys.forEach((key, j) => {
    let count = 0;
    let sum = 0;
    for (const r of rows) {
      const v = r[j] as number;
      if (Number.isFinite(v)) {
        count++;
        sum += v;
      }
    }
    if (count < Math.max(2, Math.ceil(0.8 * n))) {
      notCharted.push({ key, reason: 'missing' });
      return;
    }
    const mean = sum / count;
    let ss = 0;
    let min = Infinity;
    let max = -Infinity;
    for (const r of rows) {
      const v = r[j] as number;
      if (!Number.isFinite(v)) continue;
      ss += (v - mean) * (v - mean);
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const sd = Math.sqrt(ss / (count - 1));
    const part = parts[j];
    const lattice = part ? lattices.get(part.svid) : undefined;
    const order = part !== undefined && isOrderStatistic(part.statistic);
    if (min === max) {
      notCharted.push({ key, reason: 'constant', value: min, ...(lattice ? { tolerance: order ? lattice.step : lattice.step / 2 } : {}) });
      return;
    }
    // One count moves an order statistic by the sensor's step, any other statistic by its own step
    // (a mean of n readings by step / n; with fewer than FEW_LEVELS distinct Phase I values, the
    // smallest departure from its usual value): the sd is at least that, so one count is at most one sd.
    const few = lattice ? fewLevelStep(rows.map((r) => r[j] as number)) : undefined;
    const step = lattice ? (order ? lattice.step : (few ?? indicatorStep(rows.map((r) => r[j] as number)))) : undefined;
    if (spreadIsNoise(mean, Math.max(sd, step ?? 0))) {
      notCharted.push({ key, reason: 'numerical-noise' });
      return;
    }
    variables.push(key);
    columns.push(j);
    center.push(mean);
    scale.push(Math.max(sd, step ?? 0));
    floors.push(step ?? 0);
    if (lattice !== undefined && lattice.levels < FEW_LEVELS) attributes.push(key);
  });
  if (variables.length === 0) throw new MonitorBaselineError('no indicator varies in Phase I');

  const charts = (cfg.univariate ? 1 : 0) + 2 + (cfg.mewma ? 1 : 0);
  const share = 1 / budget.alarmArl / charts;
  const alpha = {
    univariate: cfg.univariate ? share : 0,
    t2: share,
    spe: share,
    mewma: cfg.mewma ? share : 0,
  };
  // Phase I values the run did not have are imputed at the indicator's mean (at most 20 % of them).
  const charted = rows.map((r) =>
    columns.map((j, c) => {
      const v = r[j] as number;
      return Number.isFinite(v) ? v : (center[c] as number);
    }),
  );
  // The univariate family: a raw and a residual limit per indicator share the univariate budget, half
  // each. Each family's half-width is the larger of the Bonferroni prediction limit (exact for normal
  // indicators with estimated parameters) and the one calibrated on Phase I's largest deviations,
  // which follows skewed and extreme-value statistics (family-limits.ts).
  const familyAlpha = alpha.univariate / 2;
  const theoryWidth = cfg.univariate ? tTwoSided(familyAlpha / variables.length, n - 1) * Math.sqrt(1 + 1 / n) : 0;
  const univariateWidth = cfg.univariate ? Math.max(theoryWidth, calibratedFamilyWidth(leaveOneOutMaxima(charted, floors), familyAlpha).width) : 0;

  // Attribute indicators (few levels of a lattice sensor) stay out of the PCA: their sd and their
  // correlations are mostly rounding (lattice.ts, FEW_LEVELS).
  const attributeSet = new Set(attributes);
  const inPca = variables.map((k) => !attributeSet.has(k));
  const pcaRows = attributes.length === 0 ? charted : charted.map((r) => r.filter((_, c) => inPca[c]));
  const pca = fitPca(pcaRows, attributes.length === 0 ? variables : variables.filter((_, c) => inPca[c]), cfg, alpha.t2);
  let residual: MonitorModel['residual'] = null;
  if (cfg.univariate && pca) {
    // In-sample residuals understate a new run's: scale by the leave-one-out SPE over the in-sample SPE.
    // Contributions in model order (no sort per run: with thousands of indicators the sorts were
    // most of the fit). Each variable's residual sum over the runs, in run order.
    const perRun = pcaRows.map((row) => scorePca(pca, row).contributionValues.spe);
    const kept = pca.kept.length;
    const sums = new Float64Array(kept);
    for (const contribs of perRun) for (let c = 0; c < kept; c++) sums[c] += contribs[c] as number;
    const loo = pca.phaseOne.looSpe;
    const inSample = pca.phaseOne.spe.reduce((a, b) => a + b, 0);
    const inflation = loo && inSample > 0 ? Math.max(1, loo.reduce((a, b) => a + b, 0) / inSample) : 1;
    // Residual sd per kept variable (NaN: not charted), keyed by name in the order of the first run's
    // contributions, largest first, as the stored model has always listed them.
    const sdOf = new Float64Array(kept).fill(NaN);
    const scale: Record<string, number> = {};
    const first = perRun[0] ?? new Float64Array(kept);
    const order = Array.from({ length: kept }, (_, c) => c).sort((a, b) => (first[b] as number) - (first[a] as number) || a - b);
    for (const c of order) {
      const sd = Math.sqrt((inflation * (sums[c] as number)) / Math.max(1, n - 1 - pca.components));
      // A residual at numerical noise level (an indicator the components explain exactly) is not charted.
      if (sd > 1e-6) {
        scale[pca.names[pca.kept[c] as number] as string] = sd;
        sdOf[c] = sd;
      }
    }
    // Each Phase I run's largest standardised residual, for the family's calibrated width. A run's
    // in-sample residuals understate what a new run shows: each is scaled by the run's leave-one-out
    // SPE over its in-sample SPE.
    const maxima = perRun.map((contribs, i) => {
      const inSpe = pca.phaseOne.spe[i] as number;
      const looSpe = loo?.[i];
      const factor = looSpe !== undefined && inSpe > 0 ? Math.sqrt(Math.max(1, looSpe / inSpe)) : 1;
      let m = 0;
      for (let c = 0; c < kept; c++) {
        const sd = sdOf[c] as number;
        if (sd === sd) m = Math.max(m, Math.sqrt(contribs[c] as number) / sd);
      }
      return factor * m;
    });
    residual = { width: Math.max(theoryWidth, calibratedFamilyWidth(maxima, familyAlpha).width), scale };
  }
  let mewma: MonitorModel['mewma'] = null;
  if (cfg.mewma && pca) {
    // Scores of runs outside Phase I vary more than Phase I's own (estimation error): scale them by
    // the leave-one-out T² inflation, mean LOO T² / k.
    const fit = pca.limits.looT2Fit;
    const inflation = fit ? Math.max(1, (fit.g * fit.h) / pca.components) : 1;
    mewma = {
      lambda: cfg.mewma.lambda,
      limit: chiSquareQuantile(1 - alpha.mewma, pca.components),
      scoreScale: pca.eigenvalues.slice(0, pca.components).map((l) => Math.sqrt(l * inflation)),
    };
  }
  return {
    kind: 'monitor',
    version,
    baselineRunIds: [...runIds],
    variables,
    center,
    scale,
    notCharted,
    alpha,
    univariateWidth,
    pca,
    residual,
    mewma,
    ...(lattices.size > 0 ? { lattices: Object.fromEntries(lattices) } : {}),
    ...(attributes.length > 0 ? { attributes } : {}),
  };
}

/** Order statistics (and differences of two): one count of the sensor moves them by its step. */
const ORDER_STATISTICS: ReadonlySet<string> = new Set(['min', 'max', 'p05', 'p95', 'median', 'first', 'last', 'range']);

function isOrderStatistic(statistic: string): boolean {
  const parts = statisticParts(statistic);
  return parts !== undefined && parts.every((p) => ORDER_STATISTICS.has(p));
}

/** The SVID and statistic of a monitor key (`[<recipe>|]m/<svid>@<window>:<statistic>`), or undefined. */
function monitorKeyParts(key: string): { readonly svid: string; readonly statistic: string } | undefined {
  const bar = key.indexOf('|');
  const k = bar >= 0 ? key.slice(bar + 1) : key;
  const colon = k.lastIndexOf(':');
  const at = k.lastIndexOf('@', colon);
  if (!k.startsWith('m/') || colon < 0 || at < 2) return undefined;
  return { svid: k.slice(2, at), statistic: k.slice(colon + 1) };
}

/**
 * The lattice of each SVID: declared in the strategy, else learnt from the Phase I values of its
 * order statistics (min, max, p05, p95, median, first, last of every window), else none.
 */
function svidLattices(
  rows: readonly (readonly number[])[],
  parts: readonly ({ readonly svid: string; readonly statistic: string } | undefined)[],
  declared: Readonly<Record<string, number>> | undefined,
): Map<string, SvidLattice> {
  const values = new Map<string, number[]>();
  parts.forEach((p, j) => {
    if (!p || !ORDER_STATISTICS.has(p.statistic)) return;
    let vs = values.get(p.svid);
    if (!vs) values.set(p.svid, (vs = []));
    for (const r of rows) {
      const v = r[j] as number;
      if (Number.isFinite(v)) vs.push(v);
    }
  });
  const out = new Map<string, SvidLattice>();
  for (const [svid, step] of Object.entries(declared ?? {})) {
    const vs = values.get(svid) ?? [];
    const origin = vs.length > 0 ? Math.min(...vs) : 0;
    out.set(svid, { step, origin, levels: new Set(vs.map((v) => Math.round((v - origin) / step))).size, source: 'declared' });
  }
  for (const [svid, vs] of values) {
    if (out.has(svid)) continue;
    const lattice = learnLattice(vs);
    if (lattice) out.set(svid, { ...lattice, source: 'learnt' });
  }
  return out;
}

/** PCA on the charted indicators, LOO-calibrated limits; null when fewer than two vary together. */
function fitPca(rows: readonly (readonly number[])[], names: readonly string[], cfg: MonitorConfig, alpha: number): PcaModel | null {
  if (names.length < 2) return null;
  const fit = (components: { rule: 'cumulative-variance'; fraction: number } | { rule: 'fixed'; count: number }) =>
    fitPcaModel(rows, names, { alpha, components, limits: 'loo' });
  try {
    const first = fit({ rule: 'cumulative-variance', fraction: cfg.pca.variance });
    const model = first.components > cfg.pca.maxComponents ? fit({ rule: 'fixed', count: cfg.pca.maxComponents }) : first;
    // The leave-one-out limits follow non-normal statistics and a short Phase I, but a g chi2(h) fitted
    // to m values extrapolates into a far tail; the F / Jackson-Mudholkar limits account for estimation
    // error under normality. Neither alone holds the budget on real traces: the larger one applies. The
    // SPE of a chamber whose residuals are heavy-tailed (a few indicators dominate it) has a longer tail
    // than any chi-square: the leave-one-out SPEs choose, by likelihood, between g chi2(h) and a
    // lognormal (with its prediction limit) (ADR 0005, decision 13).
    const theory = model.limits.theory;
    const looSpe = model.phaseOne.looSpe;
    const tail = looSpe && looSpe.length >= 3 && looSpe.every((v) => v > 0) ? fitTail(looSpe, alpha).limit : model.limits.spe;
    return {
      ...model,
      limits: {
        ...model.limits,
        t2: Math.max(model.limits.t2, theory.t2),
        spe: Math.max(tail, theory.speJacksonMudholkar ?? theory.speBox),
      },
    };
  } catch (err) {
    if (err instanceof DegenerateBaselineError || err instanceof InsufficientBaselineError) return null;
    throw err;
  }
}

/** A violation found by the monitor on one run. */
export interface MonitorViolation {
  /**
   * `T2`, `SPE`, `MEWMA` (the model), `LIMIT` (one indicator beyond its limits), `RESIDUAL` (one
   * indicator's PCA residual beyond its limit, in residual sds), `CONSTANT` (a constant indicator changed).
   */
  readonly rule: 'T2' | 'SPE' | 'MEWMA' | 'LIMIT' | 'RESIDUAL' | 'CONSTANT';
  /** The indicator (LIMIT, CONSTANT) or the model key. */
  readonly key: string;
  readonly value: number;
  readonly limit?: number;
  readonly lcl?: number;
  readonly ucl?: number;
  readonly center?: number;
  /** The indicators that drove a T² / SPE / MEWMA signal, largest first, with their share of the statistic. */
  readonly contributions?: readonly { readonly key: string; readonly share: number }[];
}

/** What the monitor says about one run. */
export interface MonitorScore {
  readonly t2: number | null;
  readonly spe: number | null;
  readonly mewma: number | null;
  /** MEWMA state after this run (standardised scores). */
  readonly mewmaState: readonly number[] | null;
  readonly violations: readonly MonitorViolation[];
  /** Charted indicators missing in this run (judged at their Phase I mean). */
  readonly missing: number;
}

const TOP_CONTRIBUTIONS = 5;

/**
 * A model's residual sd per kept PCA variable (NaN where none is charted), in the order of the
 * variables' residual contributions: what {@link scoreMonitorRun} scans a run's residuals with. A
 * caller that judges many runs with one model computes it once and passes it.
 */
export function residualSds(model: MonitorModel): Float64Array | null {
  const pca = model.pca;
  const scale = model.residual?.scale;
  if (!pca || !scale) return null;
  return Float64Array.from(pca.kept, (i) => {
    const sd = Object.prototype.hasOwnProperty.call(scale, pca.names[i] as string) ? scale[pca.names[i] as string] : undefined;
    return typeof sd === 'number' ? sd : NaN;
  });
}

function top(contribs: readonly { name: string; value: number }[], total: number) {
  return [...contribs]
    .sort((a, b) => b.value - a.value)
    .slice(0, TOP_CONTRIBUTIONS)
    .map((c) => ({ key: c.name, share: total > 0 ? c.value / total : 0 }));
}

/**
 * Judges one run's indicator values (by key) against the model, around `centre` (the adapted centre,
 * in `model.variables` order; default the Phase I mean). `residualSdsOfModel` is the model's
 * {@link residualSds}, computed here when not given.
 */
export function scoreMonitorRun(
  model: MonitorModel,
  values: ReadonlyMap<string, number>,
  modelKey: string,
  previousMewma: readonly number[] | null,
  centre: readonly number[] = model.center,
  residualSdsOfModel: Float64Array | null = residualSds(model),
): MonitorScore {
  const violations: MonitorViolation[] = [];
  for (const nc of model.notCharted) {
    if (nc.reason !== 'constant' || nc.value === undefined) continue;
    const v = values.get(nc.key);
    if (v === undefined || !Number.isFinite(v)) continue;
    const tolerance = Math.max(CONSTANT_TOLERANCE * Math.max(1, Math.abs(nc.value)), (nc.tolerance ?? 0) * (1 + CONSTANT_TOLERANCE));
    if (Math.abs(v - nc.value) > tolerance) {
      violations.push({ rule: 'CONSTANT', key: nc.key, value: v, center: nc.value });
    }
  }
  let missing = 0;
  model.variables.forEach((key, j) => {
    const v = values.get(key);
    if (v === undefined || !Number.isFinite(v)) {
      missing++;
      return;
    }
    const c = centre[j] as number;
    const s = model.scale[j] as number;
    if (model.univariateWidth > 0 && Math.abs(v - c) > model.univariateWidth * s) {
      violations.push({
        rule: 'LIMIT',
        key,
        value: v,
        center: c,
        lcl: c - model.univariateWidth * s,
        ucl: c + model.univariateWidth * s,
      });
    }
  });
  let t2: number | null = null;
  let spe: number | null = null;
  let mewma: number | null = null;
  let mewmaState: number[] | null = null;
  if (model.pca) {
    const pca = model.pca;
    // The PCA model centres on the Phase I mean: shift the run by how far the centre has moved.
    const shift = new Map(model.variables.map((k, j) => [k, (centre[j] as number) - (model.center[j] as number)]));
    const x = pca.names.map((key) => (values.get(key) ?? NaN) - (shift.get(key) ?? 0));
    const s = scorePca(pca, x);
    t2 = s.t2;
    spe = s.spe;
    if (s.t2Exceeded)
      violations.push({ rule: 'T2', key: modelKey, value: s.t2, limit: s.t2Limit, contributions: top(s.contributions.t2, s.t2) });
    if (s.speExceeded)
      violations.push({ rule: 'SPE', key: modelKey, value: s.spe, limit: s.speLimit, contributions: top(s.contributions.spe, s.spe) });
    if (model.residual) {
      const { width, scale } = model.residual;
      // Scanned in model order; only a run with a residual past its limit sorts its contributions,
      // so its violations are listed largest first.
      const sdOf = residualSdsOfModel ?? new Float64Array(pca.kept.length).fill(NaN);
      const spe = s.contributionValues.spe;
      let exceeded = false;
      for (let c = 0; c < spe.length && !exceeded; c++) exceeded = Math.sqrt(spe[c] as number) / (sdOf[c] as number) > width;
      if (exceeded) {
        for (const c of s.contributions.spe) {
          const sd = scale[c.name];
          if (sd === undefined) continue;
          const r = Math.sqrt(c.value) / sd;
          if (r > width) violations.push({ rule: 'RESIDUAL', key: c.name, value: r, limit: width });
        }
      }
    }
    if (model.mewma) {
      const { lambda, limit, scoreScale } = model.mewma;
      const prev = previousMewma && previousMewma.length === scoreScale.length ? previousMewma : null;
      mewmaState = scoreScale.map((sc, a) => lambda * ((s.scores[a] as number) / sc) + (1 - lambda) * (prev?.[a] ?? 0));
      let q = 0;
      for (const z of mewmaState) q += z * z;
      mewma = (q * (2 - lambda)) / lambda;
      if (mewma > limit) {
        // Which indicators the smoothed shift points at: its direction mapped back through the loadings.
        const dir = pca.kept.map((_, j) => {
          let d = 0;
          mewmaState?.forEach((z, a) => (d += z * (scoreScale[a] as number) * (pca.loadings[a]?.[j] ?? 0)));
          return d * d;
        });
        const total = dir.reduce((a, b) => a + b, 0);
        const contribs = dir.map((value, j) => ({ name: pca.names[pca.kept[j] as number] as string, value }));
        violations.push({ rule: 'MEWMA', key: modelKey, value: mewma, limit, contributions: top(contribs, total) });
      }
    }
  }
  return { t2, spe, mewma, mewmaState, violations, missing };
}
