import type { AssignmentMap, Heartbeat } from '@defender/contracts';

/** A valid assignment map for tests: `owners` chamber -> defender, weights per chamber (default 100). */
export function mapOf(version: number, owners: Record<string, string>, opts: { trigger?: AssignmentMap['trigger']; weights?: Record<string, number>; t?: number; moved?: Record<string, number> } = {}): AssignmentMap {
  const info: AssignmentMap['defenderInfo'] = {};
  for (const [chamber, d] of Object.entries(owners)) {
    const e = info[d] ?? { chambers: 0, weight: 0, capacity: 1 };
    info[d] = { ...e, chambers: e.chambers + 1, weight: e.weight + (opts.weights?.[chamber] ?? 100) };
  }
  const ws = Object.values(info).map((i) => i.weight);
  const avg = ws.reduce((a, b) => a + b, 0) / Math.max(1, ws.length);
  return {
    schema: 1,
    version,
    timestamp: new Date(opts.t ?? Date.UTC(2026, 0, 1, 0, version)).toISOString(),
    state: 'STABLE',
    lifecycleState: 'stable',
    firstAssignmentAt: new Date(Date.UTC(2026, 0, 1)).toISOString(),
    fencingToken: '1',
    controllerId: 'controller-0',
    trigger: opts.trigger ?? 'cold_start',
    defenderCount: Object.keys(info).length,
    chamberCount: Object.keys(owners).length,
    assignments: owners,
    lastMovedAt: opts.moved ?? {},
    defenderInfo: info,
    statistics: {
      minChambersPerDefender: 0,
      maxChambersPerDefender: 0,
      avgChambersPerDefender: 0,
      minWeightPerDefender: Math.min(...ws),
      maxWeightPerDefender: Math.max(...ws),
      avgWeightPerDefender: avg,
      weightVariancePercent: 0,
      calculationDurationMs: 1,
      chambersMoved: 0,
      movedWeight: 0,
      movedWeightFraction: 0,
      floorFraction: 0,
    },
  };
}

export function heartbeatOf(defenderId: string, over: Partial<Heartbeat> = {}): Heartbeat {
  return {
    schema: 1,
    defenderId,
    podName: `pod-${defenderId}`,
    state: 'STABLE',
    mapVersionSeen: 1,
    load: { chambers: 1, inflight: 0, processedTotal: 5 },
    intervalSeconds: 2,
    startedAt: new Date(Date.UTC(2026, 0, 1)).toISOString(),
    sentAt: new Date().toISOString(),
    ...over,
  };
}
