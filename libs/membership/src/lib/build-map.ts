import type { AssignmentMap } from '@defender/contracts';

/** Inputs of {@link buildAssignmentMap}. */
export interface BuildMapInput {
  readonly version: number;
  readonly now: Date;
  readonly fencingToken: string;
  readonly controllerId: string;
  readonly trigger: AssignmentMap['trigger'];
  readonly state: AssignmentMap['state'];
  readonly lifecycleState: AssignmentMap['lifecycleState'];
  readonly firstAssignmentAt: string | null;
  /** Chamber key -> defender id. */
  readonly assignments: Readonly<Record<string, string>>;
  /** Chamber key -> weight (missing: 0). */
  readonly weights?: Readonly<Record<string, number>>;
  /** Live defenders and their capacity (default 1); defenders without chambers are listed too. */
  readonly defenders: readonly { id: string; capacity?: number }[];
  readonly lastMovedAt?: Readonly<Record<string, number>>;
  readonly calculationDurationMs?: number;
  readonly movement?: { chambersMoved: number; movedWeight: number; movedWeightFraction: number; floorFraction: number };
}

/**
 * Assembles the published assignment map: per-defender chamber counts and weights, and the seeds'
 * statistics block, from an assignment. Pure; the result passes `assignmentMapSchema` when the
 * inputs are consistent (every owner listed in `defenders`).
 */
export function buildAssignmentMap(input: BuildMapInput): AssignmentMap {
  const info: AssignmentMap['defenderInfo'] = {};
  for (const d of [...input.defenders].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    info[d.id] = { chambers: 0, weight: 0, capacity: d.capacity ?? 1 };
  }
  const assignments: Record<string, string> = {};
  for (const key of Object.keys(input.assignments).sort()) {
    const owner = input.assignments[key] as string;
    assignments[key] = owner;
    const slot = info[owner];
    if (slot) {
      slot.chambers += 1;
      slot.weight += input.weights?.[key] ?? 0;
    }
  }
  const slots = Object.values(info);
  const counts = slots.map((s) => s.chambers);
  const weights = slots.map((s) => s.weight);
  const n = slots.length;
  const avg = (xs: number[]) => (n === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / n);
  const avgW = avg(weights);
  const sd = n === 0 ? 0 : Math.sqrt(weights.reduce((a, w) => a + (w - avgW) ** 2, 0) / n);
  const m = input.movement ?? { chambersMoved: 0, movedWeight: 0, movedWeightFraction: 0, floorFraction: 0 };
  return {
    schema: 1,
    version: input.version,
    timestamp: input.now.toISOString(),
    state: input.state,
    lifecycleState: input.lifecycleState,
    firstAssignmentAt: input.firstAssignmentAt,
    fencingToken: input.fencingToken,
    controllerId: input.controllerId,
    trigger: input.trigger,
    defenderCount: n,
    chamberCount: Object.keys(assignments).length,
    assignments,
    lastMovedAt: { ...(input.lastMovedAt ?? {}) },
    defenderInfo: info,
    statistics: {
      minChambersPerDefender: n === 0 ? 0 : Math.min(...counts),
      maxChambersPerDefender: n === 0 ? 0 : Math.max(...counts),
      avgChambersPerDefender: avg(counts),
      minWeightPerDefender: n === 0 ? 0 : Math.min(...weights),
      maxWeightPerDefender: n === 0 ? 0 : Math.max(...weights),
      avgWeightPerDefender: avgW,
      weightVariancePercent: avgW === 0 ? 0 : (sd / avgW) * 100,
      calculationDurationMs: input.calculationDurationMs ?? 0,
      ...m,
    },
  };
}
