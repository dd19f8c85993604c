import { buildProblem, NEW_CHAMBER, ORPHAN, type Problem } from './problem';
import { seedTwoPhase } from './seed-two-phase';
import { type PhaseTimes, type Placement, REASON_CAP } from './placement';
import { stickyBalanced } from './sticky-balanced';
import type {
  AssignmentOptions,
  AssignmentResult,
  AssignmentStats,
  ChamberInput,
  ChamberMove,
  DefenderInput,
  PreviousAssignment,
} from './types';

/**
 * Assigns every chamber to exactly one live defender.
 *
 * The default strategy, `sticky-balanced`, starts from `previous` and moves only what balance
 * requires: with the same live defenders (a rolling update) and a balanced previous map nothing
 * moves; a crash in `orphans-only` mode moves exactly the orphaned chambers; a planned scale
 * N->M moves close to the floor reported in `stats.floorWeight`. In `balance` mode, without
 * chambers in cooldown and with a chamber cap that does not bind, every defender ends at most
 * `stats.balanceBound` x its capacity share (1 + tolerance whenever chamber sizes allow it).
 * `seed-two-phase` is the seeds' baseline (ring + greedy ±20 %), which ignores `previous`.
 *
 * Deterministic: chambers are processed by key and defenders by id, so the same input in any
 * order gives the same result (and the same key order in `assignments`). Pure apart from the
 * optional `clock`, which only feeds `stats.calculationDurationMs`.
 *
 * @param previous the published map, or null at cold start.
 * @param chambers every chamber to assign, unique keys.
 * @param defenders the live defenders, unique ids.
 * @throws InvalidAssignmentInputError on malformed input or options (every problem listed).
 * @throws DuplicateChamberError / DuplicateDefenderError on a repeated key or id.
 * @throws NoDefendersError when there are chambers but no defenders.
 * @throws InfeasibleAssignmentError when chambers > maxChambersPerDefender x defenders.
 * @throws InvalidHashConfigError (from `@defender/hashing`) when `vnodes` is outside 150-500.
 */
export function computeAssignment(
  previous: PreviousAssignment | null,
  chambers: readonly ChamberInput[],
  defenders: readonly DefenderInput[],
  options: AssignmentOptions = {},
): AssignmentResult {
  const started = options.clock?.();
  const p = buildProblem(previous, chambers, defenders, options);
  const placement =
    p.strategy === 'seed-two-phase'
      ? seedTwoPhase(p, { vnodes: options.vnodes, ring: options.ring, clock: options.clock })
      : stickyBalanced(p, options.clock);
  return buildResult(p, placement, previous, options, started);
}

function buildResult(
  p: Problem,
  placement: Placement,
  previous: PreviousAssignment | null,
  options: AssignmentOptions,
  started: number | undefined,
): AssignmentResult {
  const { owner, reason } = placement;
  const { keys, ids, weight } = p;
  const assignments: Record<string, string> = {};
  const lastMovedAt: Record<string, number> = {};
  const moves: ChamberMove[] = [];
  const load = new Float64Array(p.m);
  const count = new Int32Array(p.m);
  const kept = new Float64Array(p.m);
  let orphanWeight = 0;
  let movedWeight = 0;
  let placed = 0;
  const prevMoved = previous?.lastMovedAt;

  for (let i = 0; i < p.n; i++) {
    const key = keys[i];
    const d = owner[i];
    const w = weight[i];
    assignments[key] = ids[d];
    load[d] += w;
    count[d]++;
    const was = p.prevOwner[i];
    if (was >= 0) kept[was] += w;
    else if (was === ORPHAN) orphanWeight += w;
    if (was === NEW_CHAMBER) {
      placed++;
    } else if (was !== d) {
      movedWeight += w;
      moves.push({
        key,
        from: was === ORPHAN ? (p.orphanFrom.get(i) as string) : ids[was],
        to: ids[d],
        weight: w,
        reason: was === ORPHAN ? 'orphaned' : reason[i] === REASON_CAP ? 'chamber-cap' : 'rebalance',
      });
      if (p.now !== undefined) {
        lastMovedAt[key] = p.now;
        continue;
      }
    }
    if (p.locked[i] === 1 && prevMoved !== undefined) lastMovedAt[key] = prevMoved[key];
  }

  let floorWeight = orphanWeight;
  for (let d = 0; d < p.m; d++) floorWeight += Math.max(0, kept[d] - p.target[d]);

  const stats = buildStats(p, load, count, {
    moved: moves.length,
    placed,
    movedWeight,
    floorWeight,
    durationMs: started === undefined ? 0 : Math.max(0, (options.clock?.() ?? started) - started),
    phases: placement.phases,
  });
  return { assignments, lastMovedAt, moves, stats };
}

function buildStats(
  p: Problem,
  load: Float64Array,
  count: Int32Array,
  movement: { moved: number; placed: number; movedWeight: number; floorWeight: number; durationMs: number; phases?: PhaseTimes },
): AssignmentStats {
  const T = p.totalWeight;
  let minW = Number.POSITIVE_INFINITY;
  let maxW = 0;
  let minC = Number.POSITIVE_INFINITY;
  let maxC = 0;
  let maxRatio = 0;
  let minRatio = Number.POSITIVE_INFINITY;
  let minShare = Number.POSITIVE_INFINITY;
  for (let d = 0; d < p.m; d++) {
    minW = Math.min(minW, load[d]);
    maxW = Math.max(maxW, load[d]);
    minC = Math.min(minC, count[d]);
    maxC = Math.max(maxC, count[d]);
    if (T > 0) {
      const r = load[d] / p.share[d];
      maxRatio = Math.max(maxRatio, r);
      minRatio = Math.min(minRatio, r);
      minShare = Math.min(minShare, p.share[d]);
    }
  }
  const avgW = p.m > 0 ? T / p.m : 0;
  let sq = 0;
  for (let d = 0; d < p.m; d++) sq += (load[d] - avgW) ** 2;
  const std = p.m > 0 ? Math.sqrt(sq / p.m) : 0;
  return {
    strategy: p.strategy,
    mode: p.mode,
    defenderCount: p.m,
    chamberCount: p.n,
    totalWeight: T,
    minChambersPerDefender: p.m > 0 ? minC : 0,
    maxChambersPerDefender: maxC,
    avgChambersPerDefender: p.m > 0 ? p.n / p.m : 0,
    minWeightPerDefender: p.m > 0 ? minW : 0,
    maxWeightPerDefender: maxW,
    avgWeightPerDefender: avgW,
    weightVariancePercent: avgW > 0 ? (std / avgW) * 100 : 0,
    maxToAvgWeight: avgW > 0 ? maxW / avgW : 1,
    maxLoadRatio: T > 0 ? maxRatio : 1,
    minLoadRatio: T > 0 ? minRatio : 1,
    balanceBound: T > 0 ? Math.max(1 + p.tolerance, 1 + p.maxWeight / minShare) : 1 + p.tolerance,
    calculationDurationMs: movement.durationMs,
    phase1DurationMs: movement.phases?.phase1Ms ?? 0,
    phase2DurationMs: movement.phases?.phase2Ms ?? 0,
    rebalanceIterations: movement.phases?.rebalanceIterations ?? 0,
    chambersMoved: movement.moved,
    chambersPlaced: movement.placed,
    movedWeight: movement.movedWeight,
    movedWeightFraction: T > 0 ? movement.movedWeight / T : 0,
    floorWeight: movement.floorWeight,
    floorFraction: T > 0 ? movement.floorWeight / T : 0,
    chambersInCooldown: p.lockedCount,
  };
}
