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

/** The driver's error for a connection that closed under a request (`requestNotWritten`: it never left). */
function socketError(err: unknown): { requestNotWritten: boolean } | undefined {
  if (!(err instanceof errors.DriverError)) return undefined;
  const e = err as errors.DriverError & { isSocketError?: unknown; requestNotWritten?: unknown };
  return e.isSocketError === true ? { requestNotWritten: e.requestNotWritten === true } : undefined;
}

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
 * Maps driver errors to the store's: unreachable cluster, timeouts, a connection closed under the
 * request, unavailable/overloaded replicas and read/write failures become a retryable
 * StoreUnavailableError (a write timeout, including the Paxos phase of a lightweight transaction,
 * and a write whose connection closed after it was sent, with `outcomeUnknown`). Everything else (syntax,
 * invalid query, auth) is a bug or misconfiguration and passes through unchanged.
 */
export function mapCassandraError(err: unknown, operation: string, kind: 'read' | 'write'): unknown {
  if (isOwn(err)) return err;
  if (err instanceof errors.NoHostAvailableError) {
    // Each host's reason (refused, TLS handshake, certificate name), so a misconfiguration is visible.
    const reasons = Object.entries((err.innerErrors ?? {}) as Record<string, unknown>)
      .slice(0, 3)
      .map(([host, e]) => `${host}: ${e instanceof Error ? e.message : String(e)}`);
    return new StoreUnavailableError(`Cassandra: no host available for ${operation}${reasons.length > 0 ? ` (${reasons.join('; ')})` : ''}`, {
      cause: err,
      outcomeUnknown: kind === 'write',
    });
  }
  if (err instanceof errors.OperationTimedOutError) {
    return new StoreUnavailableError(`Cassandra: ${operation} timed out`, { cause: err, outcomeUnknown: kind === 'write' });
  }
  const socket = socketError(err);
  if (socket) {
    // The driver does not retry a non-idempotent request (every LWT) whose connection broke: the
    // caller's retry of the same write is what resolves it.
    return new StoreUnavailableError(`Cassandra: the connection closed during ${operation}`, {
      cause: err,
      outcomeUnknown: kind === 'write' && !socket.requestNotWritten,
    });
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
