import type { DeadLetterReason } from '@defender/contracts';
import type { StrategyIssue } from '@defender/defense-rules';

/**
 * The run's trace cannot be evaluated: it fails the U-chart engine's validation (e.g. explicit sample
 * times that are not finite or go backwards, step markers out of range), or it belongs to another run
 * or chamber than the notification. Deterministic: retrying the run cannot help, so a worker should
 * dead-letter it with {@link InvalidTraceError.deadLetterReason} at once. The uchart
 * `TraceValidationError` (listing every issue) is the `cause` when there is one.
 */
export class InvalidTraceError extends Error {
  override readonly name = 'InvalidTraceError';
  readonly deadLetterReason: DeadLetterReason = 'invalid-trace';
  readonly runId: string;

  constructor(runId: string, detail: string, options?: { cause?: unknown }) {
    super(`trace of run ${runId} cannot be evaluated: ${detail}`, options);
    this.runId = runId;
  }
}

/**
 * The chamber's stored defense strategy document is invalid. The run is not judged by any other
 * strategy (that would hide the mistake behind alarms nobody configured): a worker dead-letters it
 * with {@link InvalidStrategyDocumentError.deadLetterReason}, so it can be replayed once the strategy
 * is fixed. `issues` lists every problem; the defense-rules `StrategyValidationError` is the `cause`.
 */
export class InvalidStrategyDocumentError extends Error {
  override readonly name = 'InvalidStrategyDocumentError';
  readonly deadLetterReason: DeadLetterReason = 'invalid-strategy';
  readonly issues: readonly StrategyIssue[];

  constructor(issues: readonly StrategyIssue[], options?: { cause?: unknown }) {
    super(
      `stored defense strategy is invalid: ${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}`,
      options,
    );
    this.issues = issues;
  }
}

/** An option of {@link createRunEvaluator} is out of its domain. */
export class EvaluatorConfigError extends Error {
  override readonly name = 'EvaluatorConfigError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}


/**
 * The chamber monitor's stored state for the run's recipe was not given, but the recipe's newest run
 * kept its memory in one (its model point carries `POINT_FLAGS.MEMORY_IN_STATE`): judging the run with
 * a fresh memory would restart the adaptive centre and the MEWMA silently. Nothing was judged; pass
 * `EvaluationInput.monitorState` (the store's `monitorState.get(chamber, recipe)`).
 */
export class MonitorStateMissingError extends Error {
  override readonly name = 'MonitorStateMissingError';

  constructor(
    readonly recipe: string | undefined,
    /** Sequence of the recipe's newest run, which kept its memory in the state. */
    readonly sequence: number,
  ) {
    super(`the monitor state of recipe ${recipe ?? '(none)'} was not given, but its run at sequence ${sequence} kept its memory in it`);
  }
}
