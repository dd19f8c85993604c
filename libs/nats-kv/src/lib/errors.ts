import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import {
  ClosedConnectionError,
  ConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  RequestError,
  TimeoutError,
} from '@nats-io/nats-core';

/** A compare-and-set lost: the entry changed since `expectedRevision` was read. */
export class RevisionConflictError extends Error {
  override readonly name = 'RevisionConflictError';
  constructor(
    readonly bucket: string,
    readonly key: string,
    readonly expectedRevision: number,
    options?: { cause?: unknown },
  ) {
    super(`${bucket}/${key}: revision ${expectedRevision} is no longer the latest`, options);
  }
}

/** NATS could not be reached or did not answer in time; retry later (with backoff). */
export class NatsUnavailableError extends Error {
  override readonly name = 'NatsUnavailableError';
  readonly retryable = true;
}

/**
 * A JetStream stream (or a KV bucket's stream) does not exist: NATS lost it (restarted with an empty
 * store) or nobody created it yet. Retryable: whoever needs it creates it again and retries.
 */
export class StreamMissingError extends Error {
  override readonly name = 'StreamMissingError';
  readonly retryable = true;
  constructor(
    readonly stream: string,
    options?: { cause?: unknown },
  ) {
    super(`stream ${stream} does not exist (NATS lost it, or it was never created)`, options);
  }
}

/** True for JetStream's answer that a stream (or a KV bucket) does not exist. */
export function isStreamNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
}

/** Every stable ID in 0..MAX_DEFENDERS-1 is held by a live process. */
export class PoolExhaustedError extends Error {
  override readonly name = 'PoolExhaustedError';
  constructor(readonly maxDefenders: number) {
    super(`all ${maxDefenders} stable IDs (defender-0..defender-${maxDefenders - 1}) are claimed by live defenders`);
  }
}

/** Our stable-ID claim was taken over (we were judged dead): stop acting as this defender at once. */
export class ClaimLostError extends Error {
  override readonly name = 'ClaimLostError';
  constructor(
    readonly defenderId: string,
    options?: { cause?: unknown },
  ) {
    super(`stable ID ${defenderId} is no longer ours`, options);
  }
}

/** JetStream's error code for "JetStream system temporarily unavailable" (a cluster without a leader). */
const JS_CLUSTER_NOT_AVAILABLE = 10008;
/** JetStream's error code for "no suitable peers for placement" (followed by the reasons). */
const JS_CLUSTER_NO_PEERS = 10005;

/**
 * "no suitable peers for placement, peer offline": too few of the cluster's nodes are online for a
 * replicated stream or bucket right now, e.g. a node down, or (nats-server 2.10) the meta leader has
 * not yet heard from a node that just started. An outage that passes. Other reasons given with the
 * same code (tags not matched, insufficient storage) are configuration errors and stay as they are.
 */
function isPeersOffline(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JS_CLUSTER_NO_PEERS && /offline/i.test(err.message);
}

function isTransportError(err: unknown): boolean {
  return (
    // No JetStream responder on the server we reach: in a cluster, a node that rejoins (e.g. with a
    // wiped store) answers like this until it has caught up with the meta group. A dependency outage.
    // (The client does not export the class: matched by name.)
    (err instanceof Error && err.name === 'JetStreamNotEnabled') ||
    // "JetStream system temporarily unavailable": the cluster has no meta or stream leader right now.
    (err instanceof JetStreamApiError && err.code === JS_CLUSTER_NOT_AVAILABLE) ||
    isPeersOffline(err) ||
    err instanceof TimeoutError ||
    err instanceof NoRespondersError ||
    err instanceof ClosedConnectionError ||
    err instanceof DrainingConnectionError ||
    err instanceof ConnectionError ||
    err instanceof RequestError
  );
}

/** True for the JetStream answer to a failed compare-and-set (wrong last sequence). */
export function isWrongLastSequence(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/**
 * Maps an error from a KV call to the typed errors above; anything else is rethrown as is.
 * `expectedRevision` is given for compare-and-set calls.
 */
export function mapKvError(err: unknown, bucket: string, key: string, expectedRevision?: number): Error {
  if (expectedRevision !== undefined && isWrongLastSequence(err)) {
    return new RevisionConflictError(bucket, key, expectedRevision, { cause: err });
  }
  if (isTransportError(err)) {
    return new NatsUnavailableError(`${bucket}/${key}: ${(err as Error).message}`, { cause: err });
  }
  return err instanceof Error ? err : new Error(String(err));
}
