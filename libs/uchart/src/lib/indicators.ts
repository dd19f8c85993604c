import { UnknownStepError } from './errors';
import { computePercentiles, SelectionScratch, type Percentiles } from './selection';
import { computeBaseStatistics, createBaseStatistics, type BaseStatistics } from './statistics';
import type { Trace } from './trace';
import { resolveWindow, type SampleRange, type WindowSpec } from './window';

/** The statistics an indicator can chart (see {@link BaseStatistics} and {@link Percentiles}). */
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
] as const;

/** One of {@link STATISTICS}. `slope` is per second, `integral` value x seconds, `duration` seconds. */
export type StatisticName = (typeof STATISTICS)[number];

/** The order statistics, computed by selection only when an indicator asks for one. */
export const PERCENTILE_STATISTICS: readonly StatisticName[] = ['median', 'p05', 'p95'];

/** What one indicator summarises of a run: an SVID, a window and a statistic. */
export interface IndicatorSpec {
  readonly svid: string;
  readonly window: WindowSpec;
  readonly statistic: StatisticName;
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

/** Reads one statistic out of computed statistics (NaN when undefined for the window). */
export function statisticValue(
  stats: BaseStatistics,
  percentiles: Percentiles | undefined,
  name: StatisticName,
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
  }
}

type GroupResult =
  | { readonly ok: true; readonly stats: BaseStatistics; readonly pct: Percentiles | undefined }
  | {
      readonly ok: false;
      readonly reason: NoPointReason;
      readonly detail: string;
      readonly n: number;
      readonly nMissing: number;
    };

function windowKey(w: WindowSpec): string {
  return w.kind === 'context'
    ? 'context'
    : `step:${w.step}:${w.trimStartSeconds ?? 0}:${w.trimEndSeconds ?? 0}`;
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
   * statistics ask for it, and percentiles only when one is asked for. Never throws for a bad run:
   * an unknown SVID or step, an empty window, no valid sample (NaN / Inf everywhere), or fewer than
   * two valid samples for `std` / `slope` yield `no-point` with a reason.
   *
   * @throws `ChartConfigError` only for an invalid window spec (a negative or non-finite trim),
   *   which strategy validation rules out.
   */
  compute(trace: Trace, specs: readonly IndicatorSpec[]): IndicatorOutcome[] {
    type Group = { svid: string; window: WindowSpec; wantsPercentiles: boolean; result?: GroupResult };
    const groups = new Map<string, Group>();
    const groupOf: Group[] = specs.map((s) => {
      const key = `${s.svid}\u0000${windowKey(s.window)}`;
      const wants = PERCENTILE_STATISTICS.includes(s.statistic);
      let g = groups.get(key);
      if (g) g.wantsPercentiles ||= wants;
      else groups.set(key, (g = { svid: s.svid, window: s.window, wantsPercentiles: wants }));
      return g;
    });
    for (const g of groups.values())
      g.result = this.computeGroup(trace, g.svid, g.window, g.wantsPercentiles);

    return specs.map((s, i): IndicatorOutcome => {
      const r = groupOf[i].result as GroupResult;
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
      const value = statisticValue(stats, r.pct, s.statistic);
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

  private computeGroup(
    trace: Trace,
    svid: string,
    window: WindowSpec,
    wantsPercentiles: boolean,
  ): GroupResult {
    const values = trace.svids.get(svid);
    if (!values)
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
    const stats = computeBaseStatistics(values, trace.timing, range, createBaseStatistics());
    const pct = wantsPercentiles && stats.n > 0 ? computePercentiles(values, range, this.scratch) : undefined;
    return { ok: true, stats, pct };
  }
}
