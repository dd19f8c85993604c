/** Base class of the election library's errors. */
export class ElectionError extends Error {
  override readonly name: string = 'ElectionError';
}

/** One malformed field of a request: the field and what is wrong with it. */
export interface FieldProblem {
  readonly field: string;
  readonly message: string;
}

/** A request that cannot be served as sent; `problems` names every bad field (gRPC INVALID_ARGUMENT). */
export class InvalidRequestError extends ElectionError {
  override readonly name = 'InvalidRequestError';

  constructor(
    readonly problems: readonly FieldProblem[],
    options?: ErrorOptions,
  ) {
    super(problems.map((p) => `${p.field}: ${p.message}`).join('; '), options);
  }
}

/** A compare-and-set lost against a concurrent writer of the same election (the revision moved). */
export class RevisionConflictError extends ElectionError {
  override readonly name = 'RevisionConflictError';

  constructor(
    readonly election: string,
    readonly expectedRevision: number,
    options?: ErrorOptions,
  ) {
    super(`election "${election}": record changed since revision ${expectedRevision}`, options);
  }
}

/** The lease store (NATS KV) cannot be reached or did not answer in time (gRPC UNAVAILABLE). */
export class LeaseStoreUnavailableError extends ElectionError {
  override readonly name = 'LeaseStoreUnavailableError';
}

/** The stored record of an election does not parse; an operator must repair it (gRPC INTERNAL). */
export class CorruptLeaseRecordError extends ElectionError {
  override readonly name = 'CorruptLeaseRecordError';

  constructor(
    readonly election: string,
    readonly revision: number,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(`election "${election}": record at revision ${revision} is unreadable: ${reason}`, options);
  }
}

/** Compare-and-set kept losing against concurrent writers; the caller should retry (gRPC ABORTED). */
export class ContentionError extends ElectionError {
  override readonly name = 'ContentionError';
}

/** A call to the election agents failed on every address tried, or with a non-retryable status. */
export class ElectionCallError extends ElectionError {
  override readonly name = 'ElectionCallError';

  constructor(
    message: string,
    /** gRPC status code of the last failure (see `@grpc/grpc-js` `status`). */
    readonly code: number,
    /** False for failures a retry cannot fix (bad credentials, malformed request). */
    readonly retryable: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
