import type { RunPointSet, UChartPoint } from '@defender/contracts';

/**
 * Bits of `UChartPoint.flags` (an unsigned 32-bit integer) as written by the run evaluator.
 *
 * - Run bits are set on every point of a run: `RUN_ALARMED` is what escalation ("2 alarms in the last
 *   5 runs") reads back from stored history, so it must survive the round trip; `RUN_HOLD` marks the
 *   run that put the chamber on hold.
 * - Point bits describe this indicator in this run: `VIOLATION` (any rule fired on it), `NEW_LIMITS`
 *   (the limits it was judged against were frozen by this run), and one bit per rule that fired.
 *
 * Chamber-monitor bits: `T2`, `SPE`, `MEWMA` on the model's point, `LIMIT` (beyond its univariate
 * limits), `RESIDUAL` (its PCA residual beyond its limit) and `CONSTANT` (a constant indicator changed)
 * on an indicator's point.
 *
 * `BASELINE_DATA` marks a monitored indicator's value (every one in Phase I, the charted ones after):
 * only a baseline fit reads it back (Phase I completing, the Phase I extension), and a fit reads the
 * chamber's full history. A run judged in the steady state never reads it, so a history read for the
 * steady state (`EvaluationInput.historyLimit` below the full history) may leave it out: the
 * defender's history cache does not keep it (ADR 0015).
 *
 * `MEMORY_IN_STATE` marks the monitor model's point of a run whose memory (counts, MEWMA vector,
 * adaptive centre) went to the recipe's monitor state record with it (`CommitRunInput.monitorState`):
 * a later run of the recipe must be given that state, and never starts afresh without it. An earlier
 * release's points lack it; their memory is in the model point's chart fields and level points.
 *
 * Bits 30-31 are reserved (always 0).
 */
export const POINT_FLAGS = {
  RUN_ALARMED: 1 << 0,
  VIOLATION: 1 << 1,
  RUN_HOLD: 1 << 2,
  NEW_LIMITS: 1 << 3,
  T2: 1 << 4,
  SPE: 1 << 5,
  MEWMA: 1 << 6,
  LIMIT: 1 << 7,
  N1: 1 << 8,
  N2: 1 << 9,
  N3: 1 << 10,
  N4: 1 << 11,
  N5: 1 << 12,
  N6: 1 << 13,
  N7: 1 << 14,
  N8: 1 << 15,
  WE1: 1 << 16,
  WE2: 1 << 17,
  WE3: 1 << 18,
  WE4: 1 << 19,
  EWMA: 1 << 20,
  CUSUM_UPPER: 1 << 21,
  CUSUM_LOWER: 1 << 22,
  SPEC_USL: 1 << 23,
  SPEC_LSL: 1 << 24,
  /** A rule id this build has no bit for (a newer defense-rules version). */
  OTHER_RULE: 1 << 25,
  CONSTANT: 1 << 26,
  RESIDUAL: 1 << 27,
  BASELINE_DATA: 1 << 28,
  MEMORY_IN_STATE: 1 << 29,
} as const;

/** A named bit of {@link POINT_FLAGS}. */
export type PointFlag = keyof typeof POINT_FLAGS;

const RULE_BITS: ReadonlyMap<string, number> = new Map(
  Object.entries(POINT_FLAGS).filter(([name]) => /^(N\d|WE\d|EWMA|MEWMA|CUSUM_|SPEC_|T2$|SPE$|LIMIT$|CONSTANT$|RESIDUAL$)/.test(name)),
);

/** The flag bit of a violation's rule id (`N1`..`N8`, `WE1`..`WE4`, `EWMA`, `CUSUM_*`, `SPEC_*`), else `OTHER_RULE`. */
export function ruleFlag(ruleId: string): number {
  return RULE_BITS.get(ruleId) ?? POINT_FLAGS.OTHER_RULE;
}

/** The names of the bits set in `flags`, in bit order (for logs, APIs and tests). */
export function describeFlags(flags: number): PointFlag[] {
  return (Object.keys(POINT_FLAGS) as PointFlag[])
    .filter((name) => (flags & POINT_FLAGS[name]) !== 0)
    .sort((a, b) => POINT_FLAGS[a] - POINT_FLAGS[b]);
}

/**
 * A committed run as the defender's history cache hands it out for a steady-state read: without the
 * points only a baseline fit reads ({@link POINT_FLAGS}.BASELINE_DATA), whole when every point is one,
 * with the union of all its points' flags (a cached run's `flagsUnion`).
 */
export function withoutBaselineData(set: RunPointSet): RunPointSet {
  let flagsUnion = 0;
  for (const p of set.points) flagsUnion |= p.flags;
  const kept = set.points.filter((p) => !isBaselineData(p));
  const points = kept.length > 0 ? kept : set.points;
  return { ...set, points, pointCount: points.length, flagsUnion: flagsUnion >>> 0 };
}

/** Whether a stored point is only read back by a baseline fit ({@link POINT_FLAGS}.BASELINE_DATA): what a steady-state read may lack. */
export function isBaselineData(point: Pick<UChartPoint, 'flags'>): boolean {
  return (point.flags & POINT_FLAGS.BASELINE_DATA) !== 0;
}
