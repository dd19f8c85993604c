/** One problem found in the environment: the variable and what is wrong with it. */
export interface ConfigProblem {
  readonly variable: string;
  readonly message: string;
}

/**
 * Thrown by {@link loadConfig} when the environment is invalid. Carries every problem at once so an
 * operator fixes them in one round instead of one restart per typo.
 */
export class ConfigValidationError extends Error {
  override readonly name = 'ConfigValidationError';

  constructor(
    readonly appName: string,
    readonly problems: readonly ConfigProblem[],
  ) {
    super(
      `${appName}: invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
        problems.map((p) => `  - ${p.variable}: ${p.message}`).join('\n'),
    );
  }
}
