/**
 * A matrix that must be symmetric positive definite is not, numerically: a Cholesky pivot is not
 * positive, or a covariance matrix is singular or too ill-conditioned to invert reliably. For a
 * Hotelling T² baseline this means collinear indicators or fewer runs than needed; use the
 * Ledoit-Wolf covariance or the PCA model instead.
 */
export class NotPositiveDefiniteError extends Error {
  override readonly name = 'NotPositiveDefiniteError';

  constructor(detail: string, options?: { cause?: unknown }) {
    super(`matrix is not positive definite: ${detail}`, options);
  }
}

/**
 * Multivariate input has the wrong shape or non-finite Phase I values. `issues` lists every problem
 * found (up to a cap), not only the first.
 */
export class MultivariateInputError extends Error {
  override readonly name = 'MultivariateInputError';
  readonly issues: readonly string[];

  constructor(issues: readonly string[], options?: { cause?: unknown }) {
    super(`invalid multivariate input: ${issues.join('; ')}`, options);
    this.issues = issues;
  }
}
