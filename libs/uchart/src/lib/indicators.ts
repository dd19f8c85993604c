import { UnknownStepError } from './errors';
import { medianFilter3 } from './median-filter';
import { computePercentiles, constantPercentiles, SelectionScratch, type Percentiles } from './selection';
import {
  computeBaseStatistics,
  computeConstantShape,
  computeConstantStatistics,
  computeShapeStatistics,
  createBaseStatistics,
  type BaseStatistics,
  type ShapeStatistics,
} from './statistics';
import type { SampleArray, Trace } from './trace';
import { computeWindowLevel } from './window-level';
import { resolveWindow, type SampleRange, type WindowSpec } from './window';

/**
 * The statistics an indicator can chart (see {@link BaseStatistics}, {@link Percentiles} and
 * {@link ShapeStatistics}: `noise` is its successive-difference noise sd, `ma_max` / `ma_min` its
 * extremes of a moving average over `MOVING_AVERAGE_SECONDS`).
 */
export const STATISTICS = [
  'n',
  'n_missing',
  'mean',
  'std',
  'min',
  'max',
  'range',
  'first',
  'last',
  'slope',
  'integral',
  'duration',
  'median',
  'p05',
  'p95',
  'noise',
  'ma_max',
  'ma_min',
] as const;

/** One of {@link STATISTICS}. `slope` is per second, `integral` value x seconds, `duration` seconds. */
export type StatisticName = (typeof STATISTICS)[number];

/** The order statistics, computed by selection only when an indicator asks for one. */
export const PERCENTILE_STATISTICS: readonly StatisticName[] = ['median', 'p05', 'p95'];

/** The statistics of a window's level alone (see {@link WindowRequest.levelOnly}). */
export const LEVEL_STATISTICS: readonly StatisticName[] = ['n', 'n_missing', 'mean'];

/** The shape statistics, computed in a pass of their own only when an indicator asks for one. */
export const SHAPE_STATISTICS: readonly StatisticName[] = ['noise', 'ma_max', 'ma_min'];

/**
 * A filter applied to an SVID's samples before its statistics: `median3` replaces every sample by the
 * median of itself and its two neighbours (the first and last sample by the median of the two at the
 * edge; NaN samples are left out of each median, a sample with no valid neighbourhood stays NaN). It
 * removes isolated single-sample glitches, which most sensors show now and then and which would
 * otherwise dominate min, max, first, last and std, while anything lasting two samples or more passes.
 */
export type SampleFilter = 'median3';

/** What one indicator summarises of a run: an SVID, a window, a statistic and optionally a filter. */
export interface IndicatorSpec {
  readonly svid: string;
  readonly window: WindowSpec;
  readonly statistic: StatisticName;
  readonly filter?: SampleFilter;
}

/**
 * Whether `values[range]` holds two or more samples, all valid and equal: its median-of-3 filtered
 * samples are then the samples themselves (each has an equal neighbour inside the window), so the
 * filter can be skipped. Most windows of a chamber's SVIDs are setpoints and states; an analog
 * window fails the test at its second or third sample.
 */
function constantWindow(values: SampleArray, range: SampleRange): boolean {
  const start = Math.max(0, range.start);
  const end = Math.min(values.length, range.end);
  if (end - start < 2) return false;
  const k = values[start] as number;
  if (!(k - k === 0)) return false;
  if (k === 0) {
    // 0 and -0 compare equal but are not the same sample (a sign the statistics keep).
    for (let i = start + 1; i < end; i++) if (!Object.is(values[i], k)) return false;
    return true;
  }
  for (let i = start + 1; i < end; i++) if (values[i] !== k) return false;
  return true;
}

/** Why an indicator yields no U-chart point for a run. */
export type NoPointReason =
  'unknown-svid' | 'unknown-step' | 'empty-window' | 'no-valid-samples' | 'insufficient-samples';

/** An indicator's result for one run: a point, or no point and why. `n` / `nMissing` describe the window. */
export type IndicatorOutcome =
  | { readonly kind: 'point'; readonly value: number; readonly n: number; readonly nMissing: number }
  | {
      readonly kind: 'no-point';
      readonly reason: NoPointReason;
      readonly detail: string;
      readonly n: number;
      readonly nMissing: number;
    };

/**
 * Reads one statistic out of computed statistics (NaN when undefined for the window, or when its
 * percentiles / shape statistics were not computed).
 */
export function statisticValue(
  stats: BaseStatistics,
  percentiles: Percentiles | undefined,
  name: StatisticName,
  shape?: ShapeStatistics,
): number {
  switch (name) {
    case 'n':
      return stats.n;
    case 'n_missing':
      return stats.nMissing;
    case 'mean':
      return stats.mean;
    case 'std':
      return stats.std;
    case 'min':
      return stats.min;
    case 'max':
      return stats.max;
    case 'range':
      return stats.range;
    case 'first':
      return stats.first;
    case 'last':
      return stats.last;
    case 'slope':
      return stats.slopePerSecond;
    case 'integral':
      return stats.integral;
    case 'duration':
      return stats.durationSeconds;
    case 'median':
      return percentiles?.median ?? NaN;
    case 'p05':
      return percentiles?.p05 ?? NaN;
    case 'p95':
      return percentiles?.p95 ?? NaN;
    case 'noise':
      return shape?.noise ?? NaN;
    case 'ma_max':
      return shape?.maMax ?? NaN;
    case 'ma_min':
      return shape?.maMin ?? NaN;
  }
}

/**
 * One (SVID, window, filter) of a run whose statistics are wanted, and which of the optional ones:
 * percentiles (`median`, `p05`, `p95`) and shape statistics (`noise`, `ma_max`, `ma_min`).
 */
export interface WindowRequest {
  readonly svid: string;
  readonly window: WindowSpec;
  readonly filter?: SampleFilter;
  readonly percentiles: boolean;
  readonly shape: boolean;
  /**
   * Only `n`, `n_missing` and `mean` are wanted (no percentile or shape statistic either): the other
   * base statistics may be left NaN, and a window of long runs of one value costs its changes rather
   * than its samples (a setpoint's whole-trace level).
   */
  readonly levelOnly?: boolean;
}

/** The statistics of one {@link WindowRequest}, or why the window has none. */
export type WindowStatistics =
  | {
      readonly ok: true;
      readonly stats: BaseStatistics;
      readonly pct: Percentiles | undefined;
      readonly shape: ShapeStatistics | undefined;
    }
  | {
      readonly ok: false;
      readonly reason: NoPointReason;
      readonly detail: string;
      readonly n: number;
      readonly nMissing: number;
    };

/**
 * One statistic of a window as a point value, or undefined when the window gives none (no valid
 * sample, or the statistic undefined for its samples): the value {@link IndicatorCalculator.compute}
 * returns as a point.
 */
export function windowValue(w: WindowStatistics, statistic: StatisticName): number | undefined {
  if (!w.ok || w.stats.n === 0) return undefined;
  const value = statisticValue(w.stats, w.pct, statistic, w.shape);
  return Number.isFinite(value) ? value : undefined;
}

function windowKey(w: WindowSpec): string {
  if (w.kind === 'context') return 'context';
  if (w.kind === 'segment') return `segment:${w.index}:${w.of}`;
  return `step:${w.step}:${w.trimStartSeconds ?? 0}:${w.trimEndSeconds ?? 0}`;
}

/**
 * Computes indicators of runs. Holds a {@link SelectionScratch} so percentile selection reuses one
 * buffer across calls; one instance per worker (not for concurrent interleaved use).
 */
export class IndicatorCalculator {
  private readonly scratch: SelectionScratch;

  constructor(scratch: SelectionScratch = new SelectionScratch()) {
    this.scratch = scratch;
  }

  /**
   * One outcome per spec, in order. Each (SVID, window) pair is computed once however many
   * statistics ask for it, and percentiles or shape statistics only when one is asked for. Never
   * throws for a bad run: an unknown SVID or step, an empty window, no valid sample (NaN / Inf
   * everywhere), or too few valid samples for a statistic (two for `std` / `slope`, two adjacent
   * for `noise`, a moving average's worth of consecutive ones for `ma_max` / `ma_min`) yield
   * `no-point` with a reason.
   *
   * @throws `ChartConfigError` only for an invalid window spec (a negative or non-finite trim),
   *   which strategy validation rules out.
   */
  compute(trace: Trace, specs: readonly IndicatorSpec[]): IndicatorOutcome[] {
    type Group = {
      svid: string;
      window: WindowSpec;
      filter: SampleFilter | undefined;
      wantsPercentiles: boolean;
      wantsShape: boolean;
      levelOnly: boolean;
      result?: WindowStatistics;
    };
    const groups = new Map<string, Group>();
    const groupOf: Group[] = specs.map((s) => {
      const key = `${s.svid}\u0000${windowKey(s.window)}\u0000${s.filter ?? ''}`;
      const wantsPercentiles = PERCENTILE_STATISTICS.includes(s.statistic);
      const wantsShape = SHAPE_STATISTICS.includes(s.statistic);
      const levelOnly = LEVEL_STATISTICS.includes(s.statistic);
      let g = groups.get(key);
      if (g) {
        g.wantsPercentiles ||= wantsPercentiles;
        g.wantsShape ||= wantsShape;
        g.levelOnly &&= levelOnly;
      } else groups.set(key, (g = { svid: s.svid, window: s.window, filter: s.filter, wantsPercentiles, wantsShape, levelOnly }));
      return g;
    });
    const all = [...groups.values()];
    const results = this.computeWindows(
      trace,
      all.map((g) => ({ svid: g.svid, window: g.window, filter: g.filter, percentiles: g.wantsPercentiles, shape: g.wantsShape, levelOnly: g.levelOnly })),
    );
    all.forEach((g, i) => (g.result = results[i]));

    return specs.map((s, i): IndicatorOutcome => {
      const r = groupOf[i].result as WindowStatistics;
      if (!r.ok)
        return { kind: 'no-point', reason: r.reason, detail: r.detail, n: r.n, nMissing: r.nMissing };
      const { stats } = r;
      if (stats.n === 0) {
        return {
          kind: 'no-point',
          reason: 'no-valid-samples',
          detail: `all ${stats.nMissing} samples are NaN/Inf`,
          n: 0,
          nMissing: stats.nMissing,
        };
      }
      const value = statisticValue(stats, r.pct, s.statistic, r.shape);
      if (!Number.isFinite(value)) {
        return {
          kind: 'no-point',
          reason: 'insufficient-samples',
          detail: `${s.statistic} is undefined for ${stats.n} valid sample(s)`,
          n: stats.n,
          nMissing: stats.nMissing,
        };
      }
      return { kind: 'point', value, n: stats.n, nMissing: stats.nMissing };
    });
  }

  /**
   * The statistics of each requested window of a run, in order: each window's samples are read once
   * for its base statistics, and again only for the percentiles or shape statistics it asks for.
   * Requests of one SVID with a filter should come one after another (the filtered samples of the
   * last SVID are kept; another SVID's replace them). Never throws for a bad run (see {@link compute}).
   *
   * @throws `ChartConfigError` only for an invalid window spec.
   */
  computeWindows(trace: Trace, requests: readonly WindowRequest[]): WindowStatistics[] {
    this.filteredSvid = undefined;
    this.constantSvid = undefined;
    const out: WindowStatistics[] = new Array(requests.length);
    // A level-only window waits for the other windows of its SVID: those found constant are runs of
    // one value that its pass need not read again (a setpoint's whole-trace level crosses its steps).
    const waiting: number[] = [];
    const flush = (): void => {
      for (const i of waiting) {
        const r = requests[i] as WindowRequest;
        out[i] = this.computeGroup(trace, r.svid, r.window, r.filter, false, false, true);
      }
      waiting.length = 0;
    };
    try {
      let svid: string | undefined;
      for (let i = 0; i < requests.length; i++) {
        const r = requests[i] as WindowRequest;
        if (r.svid !== svid) {
          flush();
          svid = r.svid;
        }
        if (r.levelOnly === true && !r.percentiles && !r.shape) waiting.push(i);
        else out[i] = this.computeGroup(trace, r.svid, r.window, r.filter, r.percentiles, r.shape);
      }
      flush();
      return out;
    } finally {
      this.filteredSvid = undefined;
      this.constantSvid = undefined;
    }
  }

  /**
   * The windows of `constantSvid` found constant so far in this call, as `[start, end)` pairs by start:
   * each holds two or more samples of one finite value.
   */
  private constantSvid: string | undefined;
  private constantRanges: number[] = [];

  private noteConstant(svid: string, length: number, range: SampleRange): void {
    if (this.constantSvid !== svid) {
      this.constantSvid = svid;
      this.constantRanges.length = 0;
    }
    const start = Math.max(0, range.start);
    const end = Math.min(length, range.end);
    const ranges = this.constantRanges;
    let at = ranges.length;
    while (at > 0 && (ranges[at - 2] as number) > start) at -= 2;
    ranges.splice(at, 0, start, end);
  }

  /**
   * The filtered samples of `filteredSvid` (one SVID at a time: specs come grouped by SVID), valid in
   * `[filteredFrom, filteredTo)`: only the windows asked for are filtered (a chamber's model charts a
   * few of an SVID's steps), growing to cover each new one.
   */
  private filtered = new Float64Array(0);
  private filteredSvid: string | undefined;
  private filteredFrom = 0;
  private filteredTo = 0;

  private filteredValues(svid: string, values: SampleArray, range: SampleRange): Float64Array {
    const n = values.length;
    const from = Math.max(0, range.start);
    const to = Math.min(n, range.end);
    if (this.filteredSvid !== svid) {
      if (this.filtered.length < n) this.filtered = new Float64Array(n);
      this.filteredSvid = svid;
      this.filteredFrom = from;
      this.filteredTo = from;
    }
    const out = this.filtered.subarray(0, n);
    if (from < this.filteredFrom || to > this.filteredTo) {
      if (to < this.filteredFrom || from > this.filteredTo) {
        // Apart from what is filtered: filter this window alone (the gap between stays unfiltered).
        medianFilter3(values, out, from, to);
        this.filteredFrom = from;
        this.filteredTo = to;
      } else {
        if (from < this.filteredFrom) medianFilter3(values, out, from, this.filteredFrom);
        if (to > this.filteredTo) medianFilter3(values, out, this.filteredTo, to);
        this.filteredFrom = Math.min(from, this.filteredFrom);
        this.filteredTo = Math.max(to, this.filteredTo);
      }
    }
    return out;
  }

  private computeGroup(
    trace: Trace,
    svid: string,
    window: WindowSpec,
    filter: SampleFilter | undefined,
    wantsPercentiles: boolean,
    wantsShape: boolean,
    levelOnly = false,
  ): WindowStatistics {
    const raw = trace.svids.get(svid);
    if (!raw)
      return { ok: false, reason: 'unknown-svid', detail: `trace has no SVID "${svid}"`, n: 0, nMissing: 0 };
    let range: SampleRange;
    try {
      range = resolveWindow(trace, window);
    } catch (err) {
      if (err instanceof UnknownStepError)
        return { ok: false, reason: 'unknown-step', detail: err.message, n: 0, nMissing: 0 };
      throw err;
    }
    if (range.end <= range.start) {
      return {
        ok: false,
        reason: 'empty-window',
        detail: `window ${windowKey(window)} selects no sample`,
        n: 0,
        nMissing: 0,
      };
    }
    // A constant window (most of a chamber's SVIDs are setpoints and states) needs neither the filter
    // (its filtered samples are its samples) nor a pass for its statistics.
    const constant = constantWindow(raw, range);
    if (levelOnly && !constant) {
      const known = this.constantSvid === svid ? this.constantRanges : undefined;
      const done = this.filteredSvid === svid ? { values: this.filtered, from: this.filteredFrom, to: this.filteredTo } : undefined;
      return { ok: true, stats: computeWindowLevel(raw, range, filter === 'median3', createBaseStatistics(), known, done), pct: undefined, shape: undefined };
    }
    // Noted for the level-only windows of the SVID, which come after the others (computeWindows).
    if (constant && !levelOnly) this.noteConstant(svid, raw.length, range);
    const values = filter === 'median3' && !constant ? this.filteredValues(svid, raw, range) : raw;
    const stats = constant
      ? computeConstantStatistics(values, trace.timing, range, createBaseStatistics())
      : computeBaseStatistics(values, trace.timing, range, createBaseStatistics());
    const pct = wantsPercentiles && stats.n > 0 ? (constant ? constantPercentiles(stats.first, stats.n) : computePercentiles(values, range, this.scratch)) : undefined;
    const shape = wantsShape && stats.n > 0 ? (constant ? computeConstantShape(values, trace.timing, range) : computeShapeStatistics(values, trace.timing, range)) : undefined;
    return { ok: true, stats, pct, shape };
  }
}
