import { canonicalJson, type JsonValue, type LimitSetRecord, type StrategyRecord } from '@defender/contracts';

function limitJson(l: LimitSetRecord): JsonValue {
  return {
    toolId: l.toolId,
    chamberId: l.chamberId,
    indicatorKey: l.indicatorKey,
    version: l.version,
    chartType: l.chartType,
    center: l.center,
    sigma: l.sigma,
    lcl: l.lcl,
    ucl: l.ucl,
    params: l.params,
    baseline: { reason: l.baseline.reason, runIds: [...l.baseline.runIds], excludedRunIds: [...l.baseline.excludedRunIds] },
    createdAt: l.createdAt.getTime(),
  };
}

/** Same limit set (used to tell an idempotent re-write from a version conflict). */
export function sameLimitSet(a: LimitSetRecord, b: LimitSetRecord): boolean {
  return canonicalJson(limitJson(a)) === canonicalJson(limitJson(b));
}

/** Same strategy record. */
export function sameStrategy(a: StrategyRecord, b: StrategyRecord): boolean {
  const j = (s: StrategyRecord): string =>
    canonicalJson({ scope: s.scope, version: s.version, document: s.document, createdAt: s.createdAt.getTime(), author: s.author });
  return j(a) === j(b);
}
