/** Reason codes kept per chamber while computing; mapped to `MoveReason` for the result. */
export const REASON_NONE = 0;
export const REASON_ORPHANED = 1;
export const REASON_REBALANCE = 2;
export const REASON_CAP = 3;

/** Owner per chamber (defender index) and the reason code of the last time it was taken off one. */
export interface Placement {
  readonly owner: Int32Array;
  readonly reason: Uint8Array;
  /** The two phases of the computation (seed 000's metrics), measured with the clock given. */
  readonly phases?: PhaseTimes;
}

/**
 * Seed 000's phases: phase 1 places every chamber (kept owners, then the pool); phase 2 is the
 * weight rebalancing (`balance` mode only). `rebalanceIterations` counts phase 2's rounds.
 */
export interface PhaseTimes {
  readonly phase1Ms: number;
  readonly phase2Ms: number;
  readonly rebalanceIterations: number;
}
