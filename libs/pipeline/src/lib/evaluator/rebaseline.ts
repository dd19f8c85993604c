import type { ChamberRef, JsonObject, LimitSetRecord, MonitorModelVersion } from '@defender/contracts';
import { MONITOR_MODEL_KEY } from '@defender/defense-rules';
import { MONITOR_PART_CHART_TYPE } from './chart-types';

/**
 * Limit-set chart type of a re-baseline request: the indicator (or the chamber monitor's model) starts a
 * new Phase I with the next run; its limits of this version are established from the runs after the
 * request, like the first ones, and replace the older version. Stored like any limit set, so the request
 * is versioned and audited (who, when, why, which runs are excluded) with the limits it replaces.
 */
export const PENDING_BASELINE_CHART_TYPE = 'pending-baseline';

/** What a re-baseline request asks for. */
export interface RebaselineRequest {
  readonly reason: string;
  /** Who asked (a user name, a tool). */
  readonly requestedBy: string;
  /** Runs never to use in the new Phase I (by run id). */
  readonly excludeRunIds: readonly string[];
  /** Phase I length for the new limits, if not the strategy's. */
  readonly minRuns?: number;
}

/** A decoded pending re-baseline. */
export interface PendingBaseline extends RebaselineRequest {
  readonly version: number;
}

/** The pending re-baseline of a limit set, or undefined when it is not one (or malformed). */
export function pendingBaselineOf(rec: LimitSetRecord): PendingBaseline | undefined {
  if (rec.chartType !== PENDING_BASELINE_CHART_TYPE) return undefined;
  const p = rec.params;
  const exclude = Array.isArray(p['excludeRunIds']) ? p['excludeRunIds'].filter((x): x is string => typeof x === 'string') : [];
  const minRuns = p['minRuns'];
  return {
    version: rec.version,
    reason: typeof p['reason'] === 'string' ? p['reason'] : 'manual',
    requestedBy: typeof p['requestedBy'] === 'string' ? p['requestedBy'] : 'unknown',
    excludeRunIds: exclude,
    ...(typeof minRuns === 'number' && Number.isInteger(minRuns) && minRuns >= 2 ? { minRuns } : {}),
  };
}

/**
 * The limit sets that re-baseline a chamber: for each current limit set (the newest version of each
 * indicator, optionally only those of `recipe`) and each recipe's newest monitor model (`models`, the
 * chamber's stored model versions) that is not already pending, a pending re-baseline at the next
 * version. Pure; the caller stores them (`putLimitSet`).
 */
export function rebaselineRecords(
  chamber: ChamberRef,
  current: readonly LimitSetRecord[],
  request: RebaselineRequest & { readonly recipe?: string },
  now: Date,
  models: readonly Pick<MonitorModelVersion, 'recipe' | 'version'>[] = [],
): LimitSetRecord[] {
  const params: JsonObject = {
    reason: request.reason,
    requestedBy: request.requestedBy,
    excludeRunIds: [...request.excludeRunIds],
    ...(request.minRuns !== undefined ? { minRuns: request.minRuns } : {}),
  };
  // A recipe's model is a record of its own (an earlier release's a limit set under the same key): the
  // newer of the two is re-baselined.
  const byKey = new Map(current.map((rec) => [rec.indicatorKey, rec]));
  for (const m of models) {
    const key = `${m.recipe}|${MONITOR_MODEL_KEY}`;
    const had = byKey.get(key);
    if (!had || had.version < m.version) byKey.set(key, { ...chamber, indicatorKey: key, version: m.version, chartType: 'monitor', center: 0, sigma: null, lcl: null, ucl: null, params: {}, baseline: { reason: 'initial', runIds: [], excludedRunIds: [] }, createdAt: now });
  }
  return [...byKey.values()]
    // A part of a model stored in parts is replaced with its model, never pending on its own.
    .filter((rec) => rec.chartType !== PENDING_BASELINE_CHART_TYPE && rec.chartType !== MONITOR_PART_CHART_TYPE)
    .filter((rec) => request.recipe === undefined || rec.indicatorKey.startsWith(`${request.recipe}|`))
    .map((rec) => ({
      toolId: chamber.toolId,
      chamberId: chamber.chamberId,
      indicatorKey: rec.indicatorKey,
      version: rec.version + 1,
      chartType: PENDING_BASELINE_CHART_TYPE,
      center: 0,
      sigma: null,
      lcl: null,
      ucl: null,
      params,
      baseline: { reason: 'manual', runIds: [], excludedRunIds: [...request.excludeRunIds] },
      createdAt: now,
    }));
}
