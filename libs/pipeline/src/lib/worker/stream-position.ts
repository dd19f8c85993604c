import type { ChamberRef, ChamberState } from '@defender/contracts';
import type { NotificationMessage, NotificationSource, PipelineObserver, PipelineStore } from '../ports';

/** Where a chamber's mark stands against the stream: not yet bound, bound to it, or recorded with another. */
export type StreamStatus = 'unbound' | 'bound' | 'mismatch';

/**
 * A notification as the worker handles it: `sequence` is the store's (the stream's plus the
 * chamber's stream offset), `streamSequence` the stream's own.
 */
export interface RunMessage extends NotificationMessage {
  readonly streamSequence: number;
}

/** What a {@link StreamPosition} reads and writes. */
export interface StreamPositionDeps {
  readonly source: Pick<NotificationSource, 'streamId' | 'lastSequence'>;
  readonly store: { readonly chamberState: Pick<PipelineStore['chamberState'], 'bindStream'> };
  readonly observer?: PipelineObserver;
}

/**
 * A chamber's place in the notification stream: the high-water mark (last applied store sequence),
 * the stream it counts in and the offset from that stream's sequences to the store's (ADR 0001,
 * ADR 0007). It checks, and when needed records (fenced, through the store's `bindStream`), that
 * the stream is still the one the mark counts in; it never decides when to look.
 */
export class StreamPosition {
  private highWaterMark = 0;
  /** The stream the mark counts in (undefined until bound) and what its sequences add up to in the store. */
  private boundStream: string | undefined;
  private streamOffset = 0;
  private streamStatus: StreamStatus = 'unbound';

  constructor(
    private readonly chamber: ChamberRef,
    private readonly key: string,
    private readonly epoch: number,
    private readonly deps: StreamPositionDeps,
  ) {}

  /** The high-water mark (store sequence; 0 before any run). */
  get mark(): number {
    return this.highWaterMark;
  }
  /** The stream the mark counts in, its offset, and whether it matches the stream now. */
  get stream(): { readonly streamId: string | undefined; readonly offset: number; readonly status: StreamStatus } {
    return { streamId: this.boundStream, offset: this.streamOffset, status: this.streamStatus };
  }
  /** The stream sequence to read from next (the one after the mark). */
  get nextStreamSequence(): number {
    return this.highWaterMark - this.streamOffset + 1;
  }

  /** Whether a notification at stream sequence `sequence` lies after the mark. */
  isAhead(sequence: number): boolean {
    return sequence > this.highWaterMark - this.streamOffset;
  }

  /** Takes the mark, stream and offset the store holds (a claim, a binding). */
  adopt(state: ChamberState): void {
    this.highWaterMark = state.highWaterMark;
    this.boundStream = state.streamId;
    this.streamOffset = state.streamOffset ?? 0;
  }

  /** The run at store sequence `sequence` was handled (applied, skipped or dead-lettered). */
  advance(sequence: number): void {
    this.highWaterMark = sequence;
  }

  /** `raw`, read from the bound stream, with its store sequence. */
  toRun(raw: NotificationMessage): RunMessage {
    return { ...raw, sequence: this.streamOffset + raw.sequence, streamSequence: raw.sequence };
  }

  /**
   * True when the stream is the one the mark counts in. Otherwise binds the chamber to the stream
   * as it is now and returns false (the caller reads again from the new position): a mark recorded
   * without an identity adopts the stream once; a mark of another (recreated) stream is re-based
   * onto it, fenced, and until that succeeds the chamber stays paused (the caller retries it like an
   * outage). True at once when the source cannot tell streams apart.
   * @throws FencedError when a newer owner holds the chamber.
   */
  async sameStream(): Promise<boolean> {
    const streamId = this.deps.source.streamId?.bind(this.deps.source);
    if (!streamId) return true;
    const current = await streamId();
    if (current === this.boundStream) {
      this.streamStatus = 'bound';
      return true;
    }
    const recorded = this.boundStream;
    // A stream recreated empty restarts its sequences at 1, below the mark. If the stream's sequences
    // reach the mark, its sequence space went on: it is the same stream (an identity read while NATS
    // restarts, or recorded then, can differ), and the mark only takes the identity, never an offset.
    const sameSequences = recorded !== undefined && (await this.sequencesReachMark());
    if (recorded !== undefined && !sameSequences && this.streamStatus !== 'mismatch') {
      this.streamStatus = 'mismatch';
      this.deps.observer?.streamMismatch?.(this.key, { recorded, current, highWaterMark: this.highWaterMark });
    }
    const state = await this.deps.store.chamberState.bindStream({
      chamber: this.chamber,
      epoch: this.epoch,
      expectedStreamId: recorded,
      streamId: current,
      rebase: recorded !== undefined && !sameSequences,
    });
    // Someone bound it meanwhile (only a newer owner can: then our next commit is fenced): its binding counts.
    this.adopt(state);
    if (state.streamId !== current) return false;
    this.streamStatus = 'bound';
    if (recorded === undefined || sameSequences) {
      if (state.highWaterMark > 0) this.deps.observer?.streamAdopted?.(this.key, { streamId: current, highWaterMark: state.highWaterMark });
    } else {
      this.deps.observer?.streamRebased?.(this.key, { from: recorded, to: current, offset: this.streamOffset });
    }
    return false;
  }

  /** Whether the stream's last sequence reaches the mark (in stream sequences); false when unknown. */
  private async sequencesReachMark(): Promise<boolean> {
    const last = this.deps.source.lastSequence?.bind(this.deps.source);
    if (!last) return false;
    return (await last()) >= this.highWaterMark - this.streamOffset;
  }
}
