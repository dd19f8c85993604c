/** One problem in a defense strategy document; `path` is dotted (`indicators.0.chart.lambda`). */
export interface StrategyIssue {
  readonly path: string;
  readonly message: string;
}

/**
 * A defense strategy document failed validation. `issues` lists every problem found; the message
 * names them all, so an operator can fix a document in one round.
 */
export class StrategyValidationError extends Error {
  override readonly name = 'StrategyValidationError';
  readonly issues: readonly StrategyIssue[];

  constructor(issues: readonly StrategyIssue[], options?: { cause?: unknown }) {
    super(
      `invalid defense strategy: ${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}`,
      options,
    );
    this.issues = issues;
  }
}
