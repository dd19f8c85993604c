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
 * Files: monitor-config.ts (statistics, configuration, budget, keys), monitor-indicators.ts (a trace's
 * indicators and their values), this file (the model and its Phase I fit), monitor-score.ts (judging a
 * run: T², SPE, MEWMA, univariate and residual limits, contributions).
 *
 * Pure and deterministic; the model is plain JSON (stored as a limit set).
 */
import {
  chiSquareQuantile,
  DegenerateBaselineError,
  fitPcaBasis,
  fQuantile,
  InsufficientBaselineError,
  fitTail,
  pcaComponentCount,
  pcaResidualContributions,
  preparePcaBasis,
  type PcaModel,
} from '@defender/uchart';
import { calibratedFamilyWidth, leaveOneOutMaxima } from './family-limits';
import { FEW_LEVELS, fewLevelStep, indicatorStep, learnLattice, type Lattice } from './lattice';
import { statisticParts, type Budget, type MonitorConfig } from './monitor-config';

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

/**
 * Numerical noise level, relative: a Phase I spread at or below this fraction of an indicator's mean is
 * not charted, and a constant indicator that moves by no more than it (of its value, at least 1) has
 * not changed (monitor-score.ts).
 */
export const CONSTANT_TOLERANCE = 1e-7;

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
  // Each indicator's Phase I values as a column, copied once (read row by row, every column's pass
  // went through every row).
  const columnOf = phaseOneColumns(rows, keys.length);
  const lattices = svidLattices(columnOf, parts, cfg.resolution);
  const floors: number[] = [];
  const attributes: string[] = [];
  const orderOf = new Map<string, boolean>();
  keys.forEach((key, j) => {
    const column = columnOf(j);
    let count = 0;
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const v = column[i] as number;
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
    for (let i = 0; i < n; i++) {
      const v = column[i] as number;
      if (!Number.isFinite(v)) continue;
      ss += (v - mean) * (v - mean);
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const sd = Math.sqrt(ss / (count - 1));
    const part = parts[j];
    const lattice = part ? lattices.get(part.svid) : undefined;
    let order = false;
    if (part !== undefined) {
      const known = orderOf.get(part.statistic);
      order = known ?? isOrderStatistic(part.statistic);
      if (known === undefined) orderOf.set(part.statistic, order);
    }
    if (min === max) {
      notCharted.push({ key, reason: 'constant', value: min, ...(lattice ? { tolerance: order ? lattice.step : lattice.step / 2 } : {}) });
      return;
    }
    // One count moves an order statistic by the sensor's step, any other statistic by its own step
    // (a mean of n readings by step / n; with fewer than FEW_LEVELS distinct Phase I values, the
    // smallest departure from its usual value): the sd is at least that, so one count is at most one sd.
    const step = lattice ? (order ? lattice.step : (fewLevelStep(Array.from(column)) ?? indicatorStep(Array.from(column)))) : undefined;
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
    const perRun = pcaRows.map((row) => pcaResidualContributions(pca, row));
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

/**
 * The Phase I values column by column: `columnOf(j)[i]` is `rows[i][j]` (a view into one copy, made
 * in a pass over the rows).
 */
function phaseOneColumns(rows: readonly (readonly number[])[], width: number): (j: number) => Float64Array {
  const n = rows.length;
  const data = new Float64Array(n * width);
  for (let i = 0; i < n; i++) {
    const r = rows[i] as readonly number[];
    for (let j = 0; j < width; j++) data[j * n + i] = r[j] as number;
  }
  return (j) => data.subarray(j * n, (j + 1) * n);
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
  columnOf: (j: number) => Float64Array,
  parts: readonly ({ readonly svid: string; readonly statistic: string } | undefined)[],
  declared: Readonly<Record<string, number>> | undefined,
): Map<string, SvidLattice> {
  const values = new Map<string, number[]>();
  parts.forEach((p, j) => {
    if (!p || !ORDER_STATISTICS.has(p.statistic)) return;
    let vs = values.get(p.svid);
    if (!vs) values.set(p.svid, (vs = []));
    const column = columnOf(j);
    for (let i = 0; i < column.length; i++) {
      const v = column[i] as number;
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
  try {
    // The fewest components that explain `variance`, at most `maxComponents`: the count is read off the
    // spectrum and the model fitted once, on the runs prepared once.
    const basis = preparePcaBasis(rows, names);
    const byVariance = { rule: 'cumulative-variance', fraction: cfg.pca.variance } as const;
    const components = pcaComponentCount(basis, byVariance) > cfg.pca.maxComponents ? ({ rule: 'fixed', count: cfg.pca.maxComponents } as const) : byVariance;
    const model = fitPcaBasis(basis, { alpha, components, limits: 'loo' });
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
