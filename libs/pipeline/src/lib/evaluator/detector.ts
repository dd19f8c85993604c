/**
 * A detector judges one run of a chamber for a strategy: the legacy rules of its indicators
 * (rules-detector.ts) or the chamber monitor (monitor-detector.ts). Each is a pure step — what it
 * remembers comes in with the run (the history, the limit sets, the monitor's state) and what it
 * learnt goes out with its verdict — and the run evaluator is the dispatcher that runs a strategy's
 * detectors and combines their verdicts into the run's points, alarm and hold.
 */
import type { LimitSetRecord, MonitorModelRecord, MonitorState, RunPointSet, UChartPoint } from '@defender/contracts';
import type { DefenseStrategy } from '@defender/defense-rules';
import type { IndicatorCalculator, Trace } from '@defender/uchart';
import type { RunIdentity } from './alarms';

/** What every detector of a run is given. */
export interface DetectorInput {
  readonly run: RunIdentity;
  /** The strategy resolved for the chamber and recipe. */
  readonly strategy: DefenseStrategy;
  readonly trace: Trace;
  readonly calculator: IndicatorCalculator;
  /** Committed runs of the chamber, oldest first (as read: maybe the newest runs of a longer history). */
  readonly history: readonly RunPointSet[];
  /** The chamber's current limit set per indicator. */
  readonly limits: readonly LimitSetRecord[];
  /** The recipe's stored monitor state, if one is stored. */
  readonly monitorState: MonitorState | undefined;
  /** The recipe's stored model (the version its state judges with, else its newest), if one is stored. */
  readonly monitorModel: MonitorModelRecord | undefined;
  /**
   * The alarm flags of the chamber's judged runs before this one, oldest first, from its memory
   * (contracts `ChamberMemory`), covering the strategy's escalation rules; undefined: the escalation
   * rules count the alarmed runs of `history`.
   */
  readonly recentAlarms: readonly boolean[] | undefined;
  /** What the run's records are stamped with. */
  readonly now: Date;
  /**
   * `history` is the newest runs of a longer history: a detector that may need older runs for this
   * run answers {@link OlderRunsNeeded} instead of judging it.
   */
  readonly historyLimited: boolean;
  /**
   * `history` was read for the steady state (a limit below the full history's, however many runs it
   * found): its runs may lack the points only a baseline fit reads (`POINT_FLAGS.BASELINE_DATA`), so a
   * detector that would fit answers {@link OlderRunsNeeded} (the full history comes with every point).
   * True whenever `historyLimited` is.
   */
  readonly historyLean: boolean;
}

/**
 * A detector's answer when `history` is the newest runs of a longer one (`historyLimited`) and this
 * run may need older ones (Phase I completes, a chart reads further back): nothing was judged. A value,
 * not an exception: the dispatcher returns it to the caller, which reads more history.
 */
export interface OlderRunsNeeded {
  readonly kind: 'older-runs-needed';
  /** Why the runs read may not be enough. */
  readonly reason: string;
}

export function olderRunsNeeded(reason: string): OlderRunsNeeded {
  return { kind: 'older-runs-needed', reason };
}

export function needsOlderRuns<V>(answer: V | OlderRunsNeeded): answer is OlderRunsNeeded {
  return (answer as { kind?: unknown }).kind === 'older-runs-needed';
}

/** One detector's verdict on a run, before the run-level flags (alarmed, hold) are known. */
export interface DetectorVerdict {
  /** Points to store, with this detector's own point flags (the run's flags are added by the dispatcher). */
  readonly points: readonly UChartPoint[];
  /** Limit sets this run established, in the order to store them (before the run's commit). */
  readonly newLimitSets: readonly LimitSetRecord[];
  /** Readings that produced no point, with why. */
  readonly skipped: readonly { readonly indicatorKey: string; readonly reason: string }[];
  /** Whether the detector alarms the run. */
  readonly alarmed: boolean;
}

/** A detector of a strategy (see the module comment). */
export interface Detector<V extends DetectorVerdict = DetectorVerdict> {
  step(input: DetectorInput): V | OlderRunsNeeded;
}
