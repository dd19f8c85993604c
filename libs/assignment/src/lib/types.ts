import type { HashRing } from '@defender/hashing';

/** One assignment unit: a chamber key (`<tool_id>:<chamber_id>`) and its weight. */
export interface ChamberInput {
  /** Non-empty, unique. */
  readonly key: string;
  /**
   * svid_count x collection_freq_hz x context_duration_seconds (30,000 to 3,600,000 in a fab);
   * any finite number >= 0 is accepted.
   */
  readonly weight: number;
}

/** A live defender (a fresh heartbeat) that can take chambers. */
export interface DefenderInput {
  /** Stable id, e.g. `defender-5`; non-empty, unique. */
  readonly id: string;
  /**
   * Relative capacity (finite, > 0; default 1): a defender of capacity 2 is given twice the weight
   * of one of capacity 1.
   */
  readonly capacity?: number;
}

/** The assignment currently published (from the map), the starting point of a sticky strategy. */
export interface PreviousAssignment {
  /** Chamber key -> defender id. Keys of chambers that no longer exist are ignored. */
  readonly assignments: Readonly<Record<string, string>>;
  /**
   * Chamber key -> when the chamber last changed owner, epoch ms. Drives the cooldown; chambers
   * absent here are not in cooldown.
   */
  readonly lastMovedAt?: Readonly<Record<string, number>>;
}

/** Strategy names accepted by {@link AssignmentOptions.strategy}. */
export type AssignmentStrategyName = 'sticky-balanced' | 'seed-two-phase';

/**
 * `balance`: reach the balance band, moving as little weight as possible.
 * `orphans-only`: the crash path: move nothing but chambers whose owner is gone (and place new
 * chambers); orphans go largest first to the least-loaded defender.
 */
export type AssignmentMode = 'balance' | 'orphans-only';

/** Options of {@link computeAssignment}. */
export interface AssignmentOptions {
  /** Default `sticky-balanced`. `seed-two-phase` is the seeds' baseline (ring + greedy ±20 %). */
  readonly strategy?: AssignmentStrategyName;
  /** Default `balance`; the trigger state machine says `orphans-only` for a crash. */
  readonly mode?: AssignmentMode;
  /**
   * Balance band half-width, a fraction in [0, 1): every defender's weight is kept within
   * (1 ± tolerance) x its capacity share of the total where chamber sizes allow. Default 0.05.
   */
  readonly tolerance?: number;
  /** Hard cap on chambers per defender (an integer >= 1). Default: none. */
  readonly maxChambersPerDefender?: number;
  /**
   * A chamber that changed owner less than this many ms before `now` is not moved again by a
   * voluntary rebalance (moves of orphans, new chambers and chamber-cap moves ignore it). Default 0.
   */
  readonly cooldownMs?: number;
  /** Current time, epoch ms: stamps moves in `lastMovedAt`; required when `cooldownMs` > 0. */
  readonly now?: number;
  /**
   * Monotonic clock in ms (e.g. `performance.now`) used only to report `calculationDurationMs`;
   * without one the duration is reported as 0.
   */
  readonly clock?: () => number;
  /** `seed-two-phase` only: virtual nodes per defender (150-500, default 200). */
  readonly vnodes?: number;
  /**
   * `seed-two-phase` only: a ring kept across calls, so a topology change re-hashes only the ring
   * points of new defenders. Its node set is replaced by the live defenders.
   */
  readonly ring?: HashRing;
}

/** Why a chamber changed owner. */
export type MoveReason = 'orphaned' | 'rebalance' | 'chamber-cap';

/** One chamber that changed owner. */
export interface ChamberMove {
  readonly key: string;
  readonly from: string;
  readonly to: string;
  readonly weight: number;
  readonly reason: MoveReason;
}

/**
 * Statistics of a result: the assignment map's `statistics` from the seeds plus movement by weight.
 * Weights are in chamber-weight units; "ratio" figures are per defender against its capacity share
 * of the total (for equal capacities, against the average).
 */
export interface AssignmentStats {
  readonly strategy: AssignmentStrategyName;
  readonly mode: AssignmentMode;
  readonly defenderCount: number;
  readonly chamberCount: number;
  readonly totalWeight: number;
  readonly minChambersPerDefender: number;
  readonly maxChambersPerDefender: number;
  readonly avgChambersPerDefender: number;
  readonly minWeightPerDefender: number;
  readonly maxWeightPerDefender: number;
  readonly avgWeightPerDefender: number;
  /** Population standard deviation of per-defender weight / average weight x 100. */
  readonly weightVariancePercent: number;
  /** maxWeightPerDefender / avgWeightPerDefender (1 when there is no weight). */
  readonly maxToAvgWeight: number;
  /** Largest weight / capacity share over defenders (1 when there is no weight). */
  readonly maxLoadRatio: number;
  /** Smallest weight / capacity share over defenders (1 when there is no weight). */
  readonly minLoadRatio: number;
  /**
   * The guaranteed bound on `maxLoadRatio` for this input: max(1 + tolerance, 1 + w_max / s_min),
   * w_max the heaviest chamber, s_min the smallest capacity share. See the README for when it
   * applies and why a single chamber can force more than 1 + tolerance.
   */
  readonly balanceBound: number;
  /** Compute time in ms measured with `options.clock`, 0 without a clock. */
  readonly calculationDurationMs: number;
  /**
   * Seed 000's phase 1 (placement: kept owners, then orphans and new chambers; the seed's ring)
   * in ms with `options.clock`, 0 without.
   */
  readonly phase1DurationMs: number;
  /** Seed 000's phase 2 (weight rebalancing, `balance` mode only) in ms with `options.clock`, 0 without. */
  readonly phase2DurationMs: number;
  /**
   * Rounds phase 2 took: sticky-balanced's shedding passes that moved something plus its repair
   * rounds (one single move or swap each); seed-two-phase's iterations (at most 5). 0 in `orphans-only`.
   */
  readonly rebalanceIterations: number;
  /** Chambers whose owner changed (new chambers are not moves). */
  readonly chambersMoved: number;
  /** Chambers without a previous owner that were given one. */
  readonly chambersPlaced: number;
  /** Weight of the moved chambers. */
  readonly movedWeight: number;
  /** movedWeight / totalWeight (0 when there is no weight). */
  readonly movedWeightFraction: number;
  /**
   * The least weight any exactly balanced result must move: orphaned weight plus, per live
   * defender, the kept weight above its target (its share; or, for a defender given a chamber
   * heavier than a share to itself, that chamber's weight, the others splitting the rest). Scale N->M from a balanced map: (M-N)/M of the total
   * when growing, (N-M)/N when shrinking; a crash: the crashed defenders' weight.
   */
  readonly floorWeight: number;
  /** floorWeight / totalWeight (0 when there is no weight). */
  readonly floorFraction: number;
  /** Chambers inside their cooldown at `now` (exempt from voluntary moves). */
  readonly chambersInCooldown: number;
}

/** The result of {@link computeAssignment}. */
export interface AssignmentResult {
  /**
   * Chamber key -> defender id for every chamber, inserted in ascending code-unit order of the key
   * (so serialisation is canonical; integer-like keys, which `<tool>:<chamber>` keys never are,
   * would enumerate first as in any JS object).
   */
  readonly assignments: Record<string, string>;
  /**
   * Chamber key -> epoch ms of its last owner change, for chambers moved now (when `now` is given)
   * and chambers still in cooldown; carry it into the next call's `previous.lastMovedAt`.
   */
  readonly lastMovedAt: Record<string, number>;
  /** Owner changes, sorted by key. */
  readonly moves: readonly ChamberMove[];
  readonly stats: AssignmentStats;
}
