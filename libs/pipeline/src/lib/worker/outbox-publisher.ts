import type { ChamberRef, OutboxEventInput } from '@defender/contracts';
import { markAfter, publishedPrefix } from '../outbox';
import type { EventSink, PipelineObserver, PipelineStore } from '../ports';

/** Outbox entries read at once. */
export const OUTBOX_PAGE = 1000;

/** What an {@link OutboxPublisher} reads, publishes and marks. */
export interface OutboxPublisherDeps {
  readonly store: Pick<PipelineStore, 'outbox'>;
  readonly sink: EventSink;
  readonly observer?: PipelineObserver;
}

/**
 * Publishes a chamber's outbox (ADR 0006) as its owner at `epoch`: the events above the
 * published-through mark, in (sequence, index) order, one at a time (each once the stream
 * acknowledged the one before), with their stored ids and payloads, then raises the mark, fenced
 * (a deposed owner's mark is refused with FencedError, so it never marks more than it published).
 * Every call may reject with an outage (the caller retries the whole call) or FencedError.
 */
export class OutboxPublisher {
  /**
   * True while this owner knows the chamber's outbox holds nothing above its published-through
   * mark: set when a {@link publishPending} pass found it empty, cleared before anything that may
   * leave it otherwise. Then a run's events, which its commit just stored, are all the outbox holds,
   * and they are published as committed without reading them back (see {@link publishCommitted}).
   */
  private outboxEmpty = false;

  constructor(
    private readonly chamber: ChamberRef,
    private readonly key: string,
    private readonly epoch: number,
    private readonly deps: OutboxPublisherDeps,
  ) {}

  /**
   * Publishes every pending event and marks them. With `afterClaim`, entries a previous owner
   * published but did not mark are recognised in the stream (its newest message per subject,
   * `EventSink.lastMsgId`) and not published again.
   */
  async publishPending(afterClaim: boolean): Promise<void> {
    this.outboxEmpty = false;
    for (let limit = OUTBOX_PAGE; ; ) {
      const pending = await this.deps.store.outbox.pending(this.chamber, { limit });
      if (pending.length === 0) {
        this.outboxEmpty = true;
        return;
      }
      const through = markAfter(pending, pending.length === limit);
      if (through === undefined) {
        // One run's events fill the page: read all of them.
        limit *= 2;
        continue;
      }
      const lastMsgId = this.deps.sink.lastMsgId?.bind(this.deps.sink);
      let skip = 0;
      if (afterClaim && lastMsgId) {
        const newest = await Promise.all([...new Set(pending.map((e) => e.subject))].map((subject) => lastMsgId(subject)));
        skip = publishedPrefix(pending, new Set(newest.filter((id): id is string => id !== undefined)));
      }
      // One at a time, so the stream never holds an entry without every entry before it (what makes
      // the newest stored message tell how far a publisher got).
      for (const e of pending.slice(skip)) {
        if (e.sequence > through) break;
        await this.deps.sink.publish(e.subject, e.payload, e.msgId);
        this.deps.observer?.published?.(this.key, e);
      }
      await this.deps.store.outbox.markPublished(this.chamber, this.epoch, through);
    }
  }

  /**
   * Publishes the events of the run just committed at `sequence`. When the outbox was empty before
   * that commit (this owner emptied it and nothing failed since), the commit's events are all it
   * holds, stored as given: they are published in their order and marked, saving the store read
   * that would only return them (it sat between the commit and the alarm; bench:pipeline). Otherwise,
   * and on every retry after a failure, the outbox is read and published as at a claim.
   */
  async publishCommitted(events: readonly OutboxEventInput[], sequence: number): Promise<void> {
    if (!this.outboxEmpty) return this.publishPending(false);
    this.outboxEmpty = false;
    for (const [index, e] of events.entries()) {
      await this.deps.sink.publish(e.subject, e.payload, e.msgId);
      this.deps.observer?.published?.(this.key, { ...e, ...this.chamber, sequence, index });
    }
    await this.deps.store.outbox.markPublished(this.chamber, this.epoch, sequence);
    this.outboxEmpty = true;
  }
}
