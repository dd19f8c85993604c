/**
 * Thrown when chambers, defenders, the previous map or the options are malformed: an empty key or
 * id, a weight that is negative or not finite, a capacity that is not finite and > 0, an option out
 * of range, or an option the chosen strategy does not support. The message names every problem.
 */
export class InvalidAssignmentInputError extends Error {
  override readonly name: string = 'InvalidAssignmentInputError';

  constructor(
    message: string,
    readonly problems: readonly string[] = [message],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Thrown when two chambers share a key; `keys` lists each duplicated key once, sorted. */
export class DuplicateChamberError extends InvalidAssignmentInputError {
  override readonly name = 'DuplicateChamberError';

  constructor(
    readonly keys: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(
      `duplicate chamber key${keys.length === 1 ? '' : 's'}: ${keys.slice(0, 10).join(', ')}${keys.length > 10 ? `, ... (${keys.length} in all)` : ''}`,
      undefined,
      options,
    );
  }
}

/** Thrown when two defenders share an id; `ids` lists each duplicated id once, sorted. */
export class DuplicateDefenderError extends InvalidAssignmentInputError {
  override readonly name = 'DuplicateDefenderError';

  constructor(
    readonly ids: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(`duplicate defender id${ids.length === 1 ? '' : 's'}: ${ids.join(', ')}`, undefined, options);
  }
}

/** Thrown when there are chambers to assign but no live defender to take them. */
export class NoDefendersError extends Error {
  override readonly name = 'NoDefendersError';

  constructor(
    readonly chamberCount: number,
    options?: { cause?: unknown },
  ) {
    super(`no live defenders to assign ${chamberCount} chamber(s) to`, options);
  }
}

/**
 * Thrown when the hard caps make an assignment impossible: more chambers than
 * `maxChambersPerDefender` x live defenders.
 */
export class InfeasibleAssignmentError extends Error {
  override readonly name = 'InfeasibleAssignmentError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Thrown by the trigger state machine on an invalid configuration or a clock that runs backwards. */
export class InvalidTriggerInputError extends Error {
  override readonly name = 'InvalidTriggerInputError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
