import type { NatsConnection } from '@nats-io/nats-core';
import {
  DeliverPolicy,
  jetstream,
  JetStreamApiError,
  JetStreamManager,
  jetstreamManager,
  type JetStreamClient,
  type MsgRequest,
  type NextMsgRequest,
  type PubAck,
} from '@nats-io/jetstream';
import { isStreamNotFound, mapKvError, NatsUnavailableError, StreamMissingError } from './errors';
import { STREAMS } from './streams';

/** One stored notification. */
export interface StoredNotification {
  readonly subject: string;
  readonly sequence: number;
  readonly data: Uint8Array;
  /** When the server stored it. */
  readonly storedAt: Date;
}

/**
 * Reads a chamber's notifications by stream sequence (`next_by_subj`), so a chamber's position lives
 * in the store (its high-water mark) and a new owner resumes exactly after it.
 *
 * Reads go to the stream's leader (`STREAM.MSG.GET`), never to a replica by direct get: a replica
 * may be behind, and one that caught up around a leader change may hold another message at a
 * sequence than the committed stream (the nats-cluster chaos suite applied such messages and moved
 * high-water marks past committed runs: docs/chaos/findings.md, 5). A leader's answer is at worst
 * stale (a deposed leader that does not know it yet), which reads as "nothing new yet".
 */
export class NotificationReader {
  /** The stream-info request in flight, and the one queued behind it (see {@link streamId}). */
  private idInFlight: Promise<string> | undefined;
  private idQueued: Promise<string> | undefined;

  private constructor(
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
  ) {}

  static async open(nc: NatsConnection, stream: string = STREAMS.notifications): Promise<NotificationReader> {
    try {
      return new NotificationReader(await jetstreamManager(nc), stream);
    } catch (err) {
      throw mapKvError(err, stream, '(stream)');
    }
  }

  /**
   * The first notification on `subject` at or after `fromSequence`, or null when there is none yet.
   *
   * @throws NatsUnavailableError when NATS does not answer (retry later).
   */
  async next(subject: string, fromSequence: number): Promise<StoredNotification | null> {
    try {
      // `next_by_subj` is a valid MSG.GET request since NATS 2.9; the client's type lacks it.
      const query: NextMsgRequest = { seq: Math.max(1, fromSequence), next_by_subj: subject };
      const m = await this.jsm.streams.getMessage(this.stream, query as unknown as MsgRequest);
      if (!m) return null;
      return { subject: m.subject, sequence: m.seq, data: m.data, storedAt: m.time };
    } catch (err) {
      if (isStreamNotFound(err)) throw new StreamMissingError(this.stream, { cause: err });
      throw mapKvError(err, this.stream, subject);
    }
  }

  /**
   * The stream's identity: its creation time as the server reports it (`created` in stream info; a
   * stream recreated empty has a new one, and its sequences restart at 1). The answer always comes
   * from a request sent after this call began, so it covers every {@link next} that completed
   * before; callers asking at once share requests (at most one in flight and one queued behind it),
   * so thousands of chambers checking after every read cost a few requests per round trip.
   *
   * @throws StreamMissingError when the stream does not exist (retryable).
   * @throws NatsUnavailableError when NATS does not answer (retry later).
   */
  streamId(): Promise<string> {
    if (!this.idInFlight) {
      const p = this.fetchStreamId();
      this.idInFlight = p;
      const clear = () => {
        if (this.idInFlight === p) this.idInFlight = undefined;
      };
      p.then(clear, clear);
      return p;
    }
    // The request in flight may have been answered before this call began: wait for the next one.
    this.idQueued ??= this.idInFlight
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.idQueued = undefined;
        return this.streamId();
      });
    return this.idQueued;
  }

  private async fetchStreamId(): Promise<string> {
    try {
      return (await this.jsm.streams.info(this.stream)).created;
    } catch (err) {
      if (isStreamNotFound(err)) throw new StreamMissingError(this.stream, { cause: err });
      throw mapKvError(err, this.stream, '(info)');
    }
  }

  /** The stream's last sequence (0 when empty). */
  async lastSequence(): Promise<number> {
    try {
      return (await this.jsm.streams.info(this.stream)).state.last_seq;
    } catch (err) {
      throw mapKvError(err, this.stream, '(info)');
    }
  }
}

/** A running {@link watchNotifications} feed. */
export interface NotificationFeed {
  stop(): Promise<void>;
}

/**
 * Calls `onNotice(subject, sequence)` for every notification stored from now on (an ordered,
 * headers-only consumer: one per process, whatever the number of chambers). It is a wake-up signal
 * only; readers fetch the message itself with {@link NotificationReader}. The ordered consumer
 * resumes after a NATS restart without gaps; callers should still re-check their chambers after a
 * reconnect (and now and then), since a notice is only a hint.
 */
export async function watchNotifications(
  nc: NatsConnection,
  onNotice: (subject: string, sequence: number) => void,
  opts: { stream?: string; onError?: (err: Error) => void; onEnd?: () => void } = {},
): Promise<NotificationFeed> {
  const stream = opts.stream ?? STREAMS.notifications;
  const js = jetstream(nc);
  let consumer;
  try {
    // No subject filter: the stream holds only notifications (and filter_subjects needs NATS 2.10).
    consumer = await js.consumers.get(stream, {
      deliver_policy: DeliverPolicy.New,
      headers_only: true,
    });
  } catch (err) {
    throw mapKvError(err, stream, '(consumer)');
  }
  const messages = await consumer.consume({ max_messages: 1000 });
  let stopping = false;
  const done = (async () => {
    try {
      for await (const m of messages) onNotice(m.subject, m.seq);
    } catch (err) {
      opts.onError?.(err as Error);
    }
    // The consumer ended without stop(): the caller should re-watch (and re-check its chambers).
    if (!stopping) opts.onEnd?.();
  })();
  return {
    async stop() {
      stopping = true;
      await messages.close();
      await done;
    },
  };
}

/** Where a message published with an id stands in its stream. */
export interface StoredAck {
  /** The stream sequence that holds the message (never 0). */
  readonly seq: number;
  /** An earlier publication with the same id stored it; this one stored nothing. */
  readonly duplicate: boolean;
}

/**
 * Publishes `data` on `subject` with the message id `msgId` (JetStream deduplication) and resolves
 * once the stream holds a message with that id, at the sequence returned.
 *
 * nats-server 2.10 answers a publication whose id matches a message still being proposed to the
 * stream's replicas (e.g. a first attempt that timed out) with a duplicate acknowledgement at
 * sequence 0, before that proposal is committed; if it never is (its leader lost its quorum), the
 * message is not in the stream. Such an answer is not an acknowledgement: this throws
 * {@link NatsUnavailableError} and the caller retries later, until the proposal is committed (a
 * duplicate at its sequence) or dropped (the retry stores it). (Newer servers answer an error.)
 *
 * @throws NatsUnavailableError when NATS does not answer, or the message is still in flight (retry).
 */
export async function publishStored(
  js: JetStreamClient,
  subject: string,
  data: string | Uint8Array,
  msgId: string,
  opts: { timeout?: number } = {},
): Promise<StoredAck> {
  let ack: PubAck;
  try {
    ack = await js.publish(subject, data, { msgID: msgId, ...(opts.timeout !== undefined ? { timeout: opts.timeout } : {}) });
  } catch (err) {
    throw mapKvError(err, '(publish)', subject);
  }
  if (!(ack.seq > 0)) {
    throw new NatsUnavailableError(
      `(publish)/${subject}: message ${msgId} is still being stored by an earlier attempt (a duplicate acknowledged at sequence ${ack.seq}); retry`,
    );
  }
  return { seq: ack.seq, duplicate: ack.duplicate };
}

/**
 * Publishes `data` on `subject` into a stream with deduplication by `msgId`: publishing the same
 * id again within the stream's duplicate window stores nothing new (used for alarms, holds and dead
 * letters, which may be re-published after a crash). Resolves only once the stream holds the
 * message ({@link publishStored}).
 *
 * @returns whether this call stored it (false: a duplicate of a stored message).
 */
export async function publishOnce(
  nc: NatsConnection,
  subject: string,
  data: string | Uint8Array,
  msgId: string,
): Promise<boolean> {
  return !(await publishStored(jetstream(nc), subject, data, msgId)).duplicate;
}

/**
 * The message id (`Nats-Msg-Id`) of the newest message on `subject` in `stream`, or undefined when
 * the subject holds none (or its newest carries no id). The outbox asks it on a claim: events are
 * published one after another in outbox order, so the newest one stored tells how far a previous
 * owner got, whatever the duplicate window.
 */
export async function lastMessageId(
  nc: NatsConnection,
  stream: string,
  subject: string,
): Promise<string | undefined> {
  try {
    const jsm = await jetstreamManager(nc);
    const m = await jsm.streams.getMessage(stream, { last_by_subj: subject });
    return m?.header.get('Nats-Msg-Id') || undefined;
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === 10037 /* no message found */) return undefined;
    throw mapKvError(err, stream, subject);
  }
}
