import { errors, types } from 'cassandra-driver';
import {
  CorruptRecordError,
  FencedError,
  InvalidRecordError,
  SequenceConflictError,
  StoreClosedError,
  StoreUnavailableError,
  TraceNotFoundError,
  VersionConflictError,
} from '@defender/contracts';
import { MigrationError } from '../migration-error';

const codes = types.responseErrorCodes;
const RETRYABLE_RESPONSES = new Set<number>([
  codes.unavailableException,
  codes.overloaded,
  codes.isBootstrapping,
  codes.truncateError,
  codes.writeTimeout,
  codes.readTimeout,
  codes.readFailure,
  codes.writeFailure,
]);
const WRITE_OUTCOME_UNKNOWN = new Set<number>([codes.writeTimeout, codes.writeFailure]);

function isOwn(err: unknown): boolean {
  return (
    err instanceof StoreUnavailableError ||
    err instanceof StoreClosedError ||
    err instanceof FencedError ||
    err instanceof SequenceConflictError ||
    err instanceof VersionConflictError ||
    err instanceof InvalidRecordError ||
    err instanceof CorruptRecordError ||
    err instanceof TraceNotFoundError ||
    err instanceof MigrationError
  );
}

/**
 * Maps driver errors to the store's: unreachable cluster, timeouts, unavailable/overloaded replicas
 * and read/write failures become a retryable StoreUnavailableError (a write timeout, including the
 * Paxos phase of a lightweight transaction, with `outcomeUnknown`). Everything else (syntax,
 * invalid query, auth) is a bug or misconfiguration and passes through unchanged.
 */
export function mapCassandraError(err: unknown, operation: string, kind: 'read' | 'write'): unknown {
  if (isOwn(err)) return err;
  if (err instanceof errors.NoHostAvailableError) {
    return new StoreUnavailableError(`Cassandra: no host available for ${operation}`, { cause: err, outcomeUnknown: kind === 'write' });
  }
  if (err instanceof errors.OperationTimedOutError) {
    return new StoreUnavailableError(`Cassandra: ${operation} timed out`, { cause: err, outcomeUnknown: kind === 'write' });
  }
  if (err instanceof errors.BusyConnectionError) {
    return new StoreUnavailableError(`Cassandra: connections busy during ${operation}`, { cause: err });
  }
  if (err instanceof errors.ResponseError && RETRYABLE_RESPONSES.has(err.code)) {
    return new StoreUnavailableError(`Cassandra: ${operation} failed: ${err.message}`, {
      cause: err,
      outcomeUnknown: kind === 'write' && WRITE_OUTCOME_UNKNOWN.has(err.code),
    });
  }
  return err;
}
