/**
 * The legacy rules detector: a strategy's indicators, each a U-chart with Phase I limits and run
 * rules (Western Electric / Nelson, EWMA, CUSUM, spec limits) from defense-rules, judged over the
 * chamber's history.
 */
import { RECORD_LIMITS, type LimitSetRecord, type UChartPoint } from '@defender/contracts';
import {
  evaluate,
  historyShortfall,
  maybeEstablishBaseline,
  readingsFromTrace,
  type ChamberHistory,
  type IndicatorConfig,
  type Reading,
} from '@defender/defense-rules';
import { DegenerateBaselineError, InsufficientBaselineError, type FrozenLimits } from '@defender/uchart';
import { decodeHistory, decodeLimits, encodeLimits, encodePoint } from './codec';
import { olderRunsNeeded, type Detector, type DetectorInput, type DetectorVerdict, type OlderRunsNeeded } from './detector';
import { POINT_FLAGS, ruleFlag } from './flags';
import { pendingBaselineOf, type PendingBaseline } from './rebaseline';
import { storeIndicatorKey } from './store-keys';

/** The rules' verdict: with the history they judged over (escalation counts its runs) and their violations and actions. */
export interface RulesVerdict extends DetectorVerdict {
  readonly history: ChamberHistory;
  readonly evaluation: ReturnType<typeof evaluate>;
}

export const rulesDetector: Detector<RulesVerdict> = {
  step(input: DetectorInput): RulesVerdict | OlderRunsNeeded {
    const { run, strategy, trace, now } = input;
    const { chamber, recipe } = run;
    const skipped: { indicatorKey: string; reason: string }[] = [];
    const readings: Reading[] = [];
    for (const r of readingsFromTrace(trace, strategy, input.calculator)) {
      const key = storeIndicatorKey(recipe, r.key);
      if (key.length > RECORD_LIMITS.indicatorKey) {
        skipped.push({ indicatorKey: key.slice(0, RECORD_LIMITS.indicatorKey), reason: `key-too-long: over ${RECORD_LIMITS.indicatorKey} characters` });
      } else readings.push({ ...r, key });
    }
    const keys = new Set(readings.map((r) => r.key));

    // Current limits of this run's indicators (the newest version, should several be passed).
    const records = new Map<string, LimitSetRecord>();
    for (const rec of input.limits) {
      if (!keys.has(rec.indicatorKey)) continue;
      const seen = records.get(rec.indicatorKey);
      if (!seen || rec.version > seen.version) records.set(rec.indicatorKey, rec);
    }
    const limits: Record<string, FrozenLimits> = {};
    // Indicators whose stored limits cannot be read: judged on spec limits only, never re-baselined
    // here (a new version would silently replace limits someone set).
    const unreadable = new Set<string>();
    // Indicators re-baselined by an operator: a new Phase I (the runs after the request).
    const pending = new Map<string, PendingBaseline>();
    for (const [key, rec] of records) {
      const request = pendingBaselineOf(rec);
      if (request) {
        pending.set(key, request);
        continue;
      }
      const decoded = decodeLimits(rec);
      if (decoded.ok) limits[key] = decoded.limits;
      else {
        unreadable.add(key);
        skipped.push({ indicatorKey: key, reason: `unreadable-limits: ${decoded.detail}` });
      }
    }
    const history: ChamberHistory = { runs: decodeHistory(input.history, keys), limits, ...(input.recentAlarms ? { recentAlarms: input.recentAlarms } : {}) };
    // A history read with a limit that it reaches may lack runs this one needs: ask for all of them.
    if (input.historyLimited) {
      const shortfall = pending.size > 0 ? 'an indicator is re-baselined' : historyShortfall(history, readings, strategy);
      if (shortfall !== undefined) return olderRunsNeeded(shortfall);
    }

    const newLimitSets: LimitSetRecord[] = [];
    const fresh = new Set<string>();
    const configs = new Map<string, IndicatorConfig>(strategy.indicators.map((c) => [c.id, c]));
    const frozenAt = now.toISOString();
    for (const r of readings) {
      if (r.value === undefined || limits[r.key] || unreadable.has(r.key) || fresh.has(r.key)) continue;
      const cfg = configs.get(r.indicatorId);
      if (!cfg) continue;
      let established: FrozenLimits | undefined;
      const request = pending.get(r.key);
      try {
        established = request
          ? maybeEstablishBaseline(
              { ...history, runs: history.runs.filter((h) => !request.excludeRunIds.includes(h.runId)) },
              r.key,
              request.minRuns !== undefined ? { ...cfg, baseline: { ...cfg.baseline, minRuns: request.minRuns } } : cfg,
              { frozenAt, version: request.version, reason: 'manual' },
            )
          : maybeEstablishBaseline(history, r.key, cfg, { frozenAt });
      } catch (err) {
        // Too many runs excluded as out of control, or no variation: Phase I keeps collecting (spec
        // limits still apply) and the baseline is tried again with the next run.
        if (err instanceof InsufficientBaselineError || err instanceof DegenerateBaselineError) continue;
        throw err;
      }
      if (!established) continue;
      limits[r.key] = established;
      fresh.add(r.key);
      newLimitSets.push(encodeLimits(chamber, r.key, established, now));
    }

    const evaluation = evaluate(history, { runId: run.runId, context: { toolId: chamber.toolId, chamberId: chamber.chamberId, recipe }, readings }, strategy);
    const pointFlags = new Map<string, number>();
    for (const v of evaluation.violations) {
      const key = v.indicator.key;
      pointFlags.set(key, (pointFlags.get(key) ?? 0) | POINT_FLAGS.VIOLATION | ruleFlag(v.rule));
    }
    const points: UChartPoint[] = [];
    for (const r of readings) {
      const p = evaluation.record.points[r.key];
      if (!p) continue;
      let flags = pointFlags.get(r.key) ?? 0;
      if (fresh.has(r.key) && p.limitsVersion !== null) flags |= POINT_FLAGS.NEW_LIMITS;
      points.push(encodePoint(r.key, p, flags));
    }
    for (const s of evaluation.skipped) skipped.push({ indicatorKey: s.key, reason: `${s.reason}: ${s.detail}` });
    return { points, newLimitSets, skipped, alarmed: evaluation.record.alarmed, history, evaluation };
  },
};
