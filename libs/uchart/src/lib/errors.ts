/** One problem found while validating a trace; `path` names the offending field. */
export interface TraceIssue {
  readonly code:
    | 'bad-run-id'
    | 'no-svids'
    | 'not-typed-array'
    | 'length-mismatch'
    | 'bad-timing'
    | 'non-finite-time'
    | 'time-not-monotonic'
    | 'bad-step';
  readonly path: string;
  readonly message: string;
}

/**
 * A T-chart (trace) failed validation. `issues` lists every problem found, not only the first, so a
 * dead-letter reason can name them all.
 */
export class TraceValidationError extends Error {
  override readonly name = 'TraceValidationError';
  readonly issues: readonly TraceIssue[];

  constructor(issues: readonly TraceIssue[], options?: { cause?: unknown }) {
    super(`invalid trace: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, options);
    this.issues = issues;
  }
}

/** A window names a recipe step the trace does not have. */
export class UnknownStepError extends Error {
  override readonly name = 'UnknownStepError';
  readonly step: string;

  constructor(step: string, known: readonly string[], options?: { cause?: unknown }) {
    super(
      `unknown recipe step "${step}" (trace has: ${known.length ? known.join(', ') : 'no steps'})`,
      options,
    );
    this.step = step;
  }
}

/** An indicator names an SVID the trace does not carry. */
export class UnknownSvidError extends Error {
  override readonly name = 'UnknownSvidError';
  readonly svid: string;

  constructor(svid: string, options?: { cause?: unknown }) {
    super(`unknown SVID "${svid}"`, options);
    this.svid = svid;
  }
}

/** A chart, window or baseline parameter is out of its domain (e.g. lambda outside (0, 1]). */
export class ChartConfigError extends Error {
  override readonly name = 'ChartConfigError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Phase I has fewer usable runs than the configured minimum (before or after exclusion). */
export class InsufficientBaselineError extends Error {
  override readonly name = 'InsufficientBaselineError';
  readonly available: number;
  readonly required: number;

  constructor(available: number, required: number, detail: string, options?: { cause?: unknown }) {
    super(`baseline needs at least ${required} runs, has ${available} (${detail})`, options);
    this.available = available;
    this.required = required;
  }
}

/**
 * A variables-chart baseline has no variation (sigma estimate 0, e.g. a constant setpoint SVID): no
 * meaningful limits exist. Spec limits still apply; chart such an indicator differently or not at all.
 */
export class DegenerateBaselineError extends Error {
  override readonly name = 'DegenerateBaselineError';

  constructor(detail: string, options?: { cause?: unknown }) {
    super(`baseline has no variation: ${detail}`, options);
  }
}

/**
 * An iterative numerical method (a distribution inverse, an eigenvalue iteration) did not converge: a
 * bug or pathological input, never expected for finite arguments in the documented domain.
 */
export class ConvergenceError extends Error {
  override readonly name = 'ConvergenceError';

  constructor(detail: string, options?: { cause?: unknown }) {
    super(`no convergence: ${detail}`, options);
  }
}
