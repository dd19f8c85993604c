import type { AssignmentMap } from '@defender/contracts';

/** Test fixture (specs only): maps of any size. */
const T = '2026-11-27T10:00:00.000Z';

/** A map of `chambers` chambers over `defenders` defenders; every chamber moved at `moved` when given. */
export function bigMap(
  version: number,
  chambers: number,
  defenders: number,
  token = '7',
  moved?: number,
): AssignmentMap {
  const assignments: Record<string, string> = {};
  const lastMovedAt: Record<string, number> = {};
  const defenderInfo: AssignmentMap['defenderInfo'] = {};
  for (let d = 0; d < defenders; d++) defenderInfo[`defender-${d}`] = { chambers: 0, weight: 0, capacity: 1 };
  for (let i = 0; i < chambers; i++) {
    const key = `tool-${String(Math.floor(i / 8)).padStart(5, '0')}:chamber-${i % 8}`;
    const owner = `defender-${(i + version) % defenders}`;
    assignments[key] = owner;
    if (moved !== undefined) lastMovedAt[key] = moved;
    const info = defenderInfo[owner] ?? { chambers: 0, weight: 0, capacity: 1 };
    defenderInfo[owner] = { ...info, chambers: info.chambers + 1, weight: info.weight + 30_000 };
  }
  return {
    schema: 1,
    version,
    timestamp: T,
    state: 'STABLE',
    lifecycleState: 'stable',
    firstAssignmentAt: T,
    fencingToken: token,
    controllerId: 'controller-0',
    trigger: 'planned_scale',
    defenderCount: defenders,
    chamberCount: chambers,
    assignments,
    lastMovedAt,
    defenderInfo,
    statistics: {
      minChambersPerDefender: 1,
      maxChambersPerDefender: 1,
      avgChambersPerDefender: 1,
      minWeightPerDefender: 30_000,
      maxWeightPerDefender: 30_000,
      avgWeightPerDefender: 30_000,
      weightVariancePercent: 0,
      calculationDurationMs: 0.1,
      chambersMoved: 0,
      movedWeight: 0,
      movedWeightFraction: 0,
      floorFraction: 0,
    },
  };
}
