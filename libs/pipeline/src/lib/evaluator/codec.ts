import type { ChamberRef, JsonObject, LimitSetRecord, RunPointSet, UChartPoint } from '@defender/contracts';
import type { ChartPoint, RunRecord } from '@defender/defense-rules';
import {
  ChartConfigError,
  ewmaAsymptoticLimits,
  shewhartLimits,
  validateCusumParams,
  validateEwmaParams,
  type ChartSpec,
  type FrozenLimits,
  type LimitsReason,
  type SigmaMethod,
} from '@defender/uchart';
import { POINT_FLAGS } from './flags';

/**
 * Keys of `UChartPoint.chart`: the chart state after the point, so the next run needs no replay.
 * - `statistic`: the charted statistic when it differs from `value` (p and u charts: count / size);
 *   absent means "equal to `value`".
 * - `ewma`, `ewmaIndex`: EWMA value and the 1-based index of the point since its limits were frozen
 *   (drives the exact time-varying limits).
 * - `cusumUpper`, `cusumLower` (sums in sigma units), `cusumUpperRun`, `cusumLowerRun` (points since
 *   the sum left 0), `cusumSignal` (1 when this point signalled, else 0).
 * A point before its indicator's first baseline (Phase I) or on a Shewhart chart without state
 * carries no `chart` at all.
 */
export const CHART_KEYS = {
  statistic: 'statistic',
  ewma: 'ewma',
  ewmaIndex: 'ewmaIndex',
  cusumUpper: 'cusumUpper',
  cusumLower: 'cusumLower',
  cusumUpperRun: 'cusumUpperRun',
  cusumLowerRun: 'cusumLowerRun',
  cusumSignal: 'cusumSignal',
} as const;

/**
 * A defense-rules chart point as a store record. `value` is the indicator value (the count for
 * attribute charts), `size` the exposure (p / np / u), `limitsVersion` the version it was judged
 * against (absent in Phase I), `flags` the caller's {@link POINT_FLAGS}, `chart` per {@link CHART_KEYS}.
 */
export function encodePoint(indicatorKey: string, point: ChartPoint, flags: number): UChartPoint {
  const chart: Record<string, number> = {};
  if (point.statistic !== point.value) chart[CHART_KEYS.statistic] = point.statistic;
  if (point.ewma !== undefined) chart[CHART_KEYS.ewma] = point.ewma;
  if (point.ewmaIndex !== undefined) chart[CHART_KEYS.ewmaIndex] = point.ewmaIndex;
  const c = point.cusum;
  if (c) {
    chart[CHART_KEYS.cusumUpper] = c.upper;
    chart[CHART_KEYS.cusumLower] = c.lower;
    chart[CHART_KEYS.cusumUpperRun] = c.upperRun;
    chart[CHART_KEYS.cusumLowerRun] = c.lowerRun;
    chart[CHART_KEYS.cusumSignal] = c.signal ? 1 : 0;
  }
  const hasChart = Object.keys(chart).length > 0;
  return {
    indicatorKey,
    value: point.value,
    ...(point.exposure !== undefined ? { size: point.exposure } : {}),
    ...(point.limitsVersion !== null ? { limitsVersion: point.limitsVersion } : {}),
    flags: flags >>> 0,
    ...(hasChart ? { chart } : {}),
  };
}

/** The inverse of {@link encodePoint} (flags are read by {@link decodeRun}). */
export function decodePoint(p: UChartPoint): ChartPoint {
  const c = p.chart;
  const point: {
    -readonly [K in keyof ChartPoint]: ChartPoint[K];
  } = {
    value: p.value,
    statistic: c?.[CHART_KEYS.statistic] ?? p.value,
    limitsVersion: p.limitsVersion ?? null,
  };
  if (p.size !== undefined) point.exposure = p.size;
  if (c) {
    if (c[CHART_KEYS.ewma] !== undefined) point.ewma = c[CHART_KEYS.ewma];
    if (c[CHART_KEYS.ewmaIndex] !== undefined) point.ewmaIndex = c[CHART_KEYS.ewmaIndex];
    const upper = c[CHART_KEYS.cusumUpper];
    const lower = c[CHART_KEYS.cusumLower];
    if (upper !== undefined && lower !== undefined) {
      point.cusum = {
        upper,
        lower,
        upperRun: c[CHART_KEYS.cusumUpperRun] ?? 0,
        lowerRun: c[CHART_KEYS.cusumLowerRun] ?? 0,
        signal: c[CHART_KEYS.cusumSignal] === 1,
      };
    }
  }
  return point;
}

/**
 * One committed run as a defense-rules {@link RunRecord}: its points (only those whose key is in
 * `keys`, when given: evaluate reads no other) and whether it alarmed (any point with
 * `RUN_ALARMED`). A run committed with no points (a dead-lettered run) is no run for the rules:
 * `undefined`.
 */
export function decodeRun(set: RunPointSet, keys?: ReadonlySet<string>): RunRecord | undefined {
  const stored = set.points; // read once: a cached run decodes on every read
  if (stored.length === 0) return undefined;
  const points: Record<string, ChartPoint> = {};
  let alarmed = false;
  for (const p of stored) {
    if ((p.flags & POINT_FLAGS.RUN_ALARMED) !== 0) alarmed = true;
    if (keys && !keys.has(p.indicatorKey)) continue;
    points[p.indicatorKey] = decodePoint(p);
  }
  return { runId: set.runId, points, alarmed };
}

/**
 * A committed run as a defense-rules {@link RunRecord} that decodes on first use: the rules read
 * history newest first and stop early (a rule window, the current limits version, the escalation
 * window), so with frozen limits only the newest few of the ~100 loaded runs are decoded. Uses the
 * set's `pointCount` / `flagsUnion` summaries when it has them; reads `set.points` at most once.
 */
class LazyRunRecord implements RunRecord {
  private decoded: Record<string, ChartPoint> | undefined;
  private wasAlarmed: boolean | undefined;

  constructor(
    readonly runId: string,
    private readonly set: RunPointSet,
    private readonly keys: ReadonlySet<string> | undefined,
  ) {
    if (set.flagsUnion !== undefined) this.wasAlarmed = (set.flagsUnion & POINT_FLAGS.RUN_ALARMED) !== 0;
  }

  get points(): Readonly<Record<string, ChartPoint>> {
    if (this.decoded === undefined) this.decode();
    return this.decoded as Record<string, ChartPoint>;
  }

  get alarmed(): boolean {
    if (this.wasAlarmed === undefined) this.decode();
    return this.wasAlarmed as boolean;
  }

  private decode(): void {
    const r = decodeRun(this.set, this.keys);
    this.decoded = r?.points ?? {};
    this.wasAlarmed = r?.alarmed ?? false;
  }
}

/**
 * Committed runs (oldest first) as defense-rules run records, dead-lettered runs (no points) left out.
 * The records decode lazily ({@link LazyRunRecord}): a run's points are decoded only if the rules
 * read that far back. Use the result within one evaluation: it keeps `sets` alive.
 */
export function decodeHistory(sets: readonly RunPointSet[], keys?: ReadonlySet<string>): RunRecord[] {
  const runs: RunRecord[] = [];
  for (const set of sets) {
    const count = set.pointCount ?? set.points.length;
    if (count > 0) runs.push(new LazyRunRecord(set.runId, set, keys));
  }
  return runs;
}

function chartParams(chart: ChartSpec): Record<string, number | string | boolean> {
  const params: Record<string, number | string | boolean> = {};
  for (const [k, v] of Object.entries(chart)) if (k !== 'type') params[k] = v as number | string | boolean;
  return params;
}

/**
 * Frozen limits as a store limit set for `indicatorKey`, created at `createdAt` (= `frozenAt`).
 * `params` holds the chart parameters (nSigma, lambda, L, k, h, headStart, resetOnSignal,
 * sigmaMethod), `mrBar` when the sigma came from moving ranges, and `exclusionPasses`. `lcl` / `ucl`:
 * the Shewhart limits (individuals), the asymptotic limits (EWMA), null for CUSUM (it signals on h,
 * in params) and attribute charts (limits depend on each point's size; `sigma` is null too).
 */
export function encodeLimits(
  chamber: ChamberRef,
  indicatorKey: string,
  limits: FrozenLimits,
  createdAt: Date,
): LimitSetRecord {
  const chart = limits.chart;
  let lcl: number | null = null;
  let ucl: number | null = null;
  if (chart.type === 'individuals') {
    ({ lcl, ucl } = shewhartLimits(limits.center, limits.sigma, chart.nSigma));
  } else if (chart.type === 'ewma') {
    ({ lcl, ucl } = ewmaAsymptoticLimits({
      lambda: chart.lambda,
      L: chart.L,
      center: limits.center,
      sigma: limits.sigma,
    }));
  }
  const params: JsonObject = {
    ...chartParams(chart),
    ...(limits.mrBar !== undefined ? { mrBar: limits.mrBar } : {}),
    exclusionPasses: limits.exclusionPasses,
  };
  return {
    toolId: chamber.toolId,
    chamberId: chamber.chamberId,
    indicatorKey,
    version: limits.version,
    chartType: chart.type,
    center: limits.center,
    sigma: Number.isFinite(limits.sigma) ? limits.sigma : null,
    lcl,
    ucl,
    params,
    baseline: {
      reason: limits.reason,
      runIds: [...limits.baselineRunIds],
      excludedRunIds: [...limits.excludedRunIds],
    },
    createdAt,
  };
}

/** {@link decodeLimits}'s result: frozen limits, or why the record cannot be used. */
export type DecodedLimits =
  | { readonly ok: true; readonly limits: FrozenLimits }
  | { readonly ok: false; readonly detail: string };

const SIGMA_METHODS: readonly SigmaMethod[] = ['moving-range', 'sample-sd', 'sample-sd-unbiased'];
const REASONS: readonly LimitsReason[] = ['initial', 'maintenance', 'recipe-change', 'manual', 'known-parameters'];

class Unreadable extends Error {
  override readonly name = 'Unreadable';
}

function num(params: JsonObject, name: string): number {
  const v = params[name];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Unreadable(`params.${name} must be a finite number`);
  return v;
}

function sigmaMethod(params: JsonObject): SigmaMethod {
  const v = params['sigmaMethod'];
  if (!SIGMA_METHODS.includes(v as SigmaMethod)) throw new Unreadable(`params.sigmaMethod ${JSON.stringify(v)} is unknown`);
  return v as SigmaMethod;
}

function positive(v: number, name: string): number {
  if (!(v > 0)) throw new Unreadable(`params.${name} must be > 0, got ${v}`);
  return v;
}

function chartOf(rec: LimitSetRecord): ChartSpec {
  const p = rec.params;
  switch (rec.chartType) {
    case 'individuals':
      return { type: 'individuals', sigmaMethod: sigmaMethod(p), nSigma: positive(num(p, 'nSigma'), 'nSigma') };
    case 'ewma': {
      const chart = { type: 'ewma', lambda: num(p, 'lambda'), L: num(p, 'L'), sigmaMethod: sigmaMethod(p) } as const;
      validateEwmaParams({ lambda: chart.lambda, L: chart.L, center: 0, sigma: 1 });
      return chart;
    }
    case 'cusum': {
      const reset = p['resetOnSignal'];
      if (typeof reset !== 'boolean') throw new Unreadable('params.resetOnSignal must be a boolean');
      const chart = {
        type: 'cusum',
        k: num(p, 'k'),
        h: num(p, 'h'),
        headStart: num(p, 'headStart'),
        resetOnSignal: reset,
        sigmaMethod: sigmaMethod(p),
      } as const;
      validateCusumParams({ target: 0, sigma: 1, k: chart.k, h: chart.h, headStart: chart.headStart });
      return chart;
    }
    case 'p':
    case 'np':
    case 'c':
    case 'u':
      return { type: rec.chartType, nSigma: positive(num(p, 'nSigma'), 'nSigma') };
    default:
      throw new Unreadable(`chart type "${rec.chartType}" is unknown`);
  }
}

/**
 * A stored limit set as uchart {@link FrozenLimits} (the inverse of {@link encodeLimits}; `frozenAt`
 * is `createdAt` in ISO 8601; a baseline reason this build does not know reads as `manual`). Never
 * throws: a record with an unknown chart type or parameters out of their domain is reported as not ok.
 */
export function decodeLimits(rec: LimitSetRecord): DecodedLimits {
  try {
    const chart = chartOf(rec);
    const attribute = chart.type === 'p' || chart.type === 'np' || chart.type === 'c' || chart.type === 'u';
    if (!Number.isFinite(rec.center)) throw new Unreadable(`center ${rec.center} is not finite`);
    const sigma = attribute ? NaN : (rec.sigma ?? NaN);
    if (!attribute && !(sigma > 0 && Number.isFinite(sigma))) throw new Unreadable(`sigma ${rec.sigma} must be > 0`);
    const mrBar = rec.params['mrBar'];
    if (mrBar !== undefined && typeof mrBar !== 'number') throw new Unreadable('params.mrBar must be a number');
    const passes = rec.params['exclusionPasses'] ?? 0;
    if (!(typeof passes === 'number' && Number.isInteger(passes) && passes >= 0)) {
      throw new Unreadable('params.exclusionPasses must be an integer >= 0');
    }
    if (!(rec.createdAt instanceof Date) || Number.isNaN(rec.createdAt.getTime())) {
      throw new Unreadable('createdAt is not a valid date');
    }
    const reason = REASONS.includes(rec.baseline.reason as LimitsReason) ? (rec.baseline.reason as LimitsReason) : 'manual';
    const limits: FrozenLimits = {
      version: rec.version,
      chart: Object.freeze(chart),
      center: rec.center,
      sigma,
      ...(typeof mrBar === 'number' ? { mrBar } : {}),
      baselineRunIds: Object.freeze([...rec.baseline.runIds]),
      excludedRunIds: Object.freeze([...rec.baseline.excludedRunIds]),
      exclusionPasses: passes,
      reason,
      frozenAt: rec.createdAt.toISOString(),
    };
    return { ok: true, limits: Object.freeze(limits) };
  } catch (err) {
    if (err instanceof Unreadable || err instanceof ChartConfigError) {
      return { ok: false, detail: `limits v${rec.version} (${rec.chartType}): ${err.message}` };
    }
    throw err;
  }
}
