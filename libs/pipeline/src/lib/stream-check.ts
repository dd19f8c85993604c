/** What a {@link StreamCheck} tells its app (logs, metrics) about the notification stream. */
export interface StreamCheckObserver {
  /** Every check that could tell: whether the stream is missing now. */
  status?(missing: boolean): void;
  /** The stream went missing (NATS lost its store?): reported once, until it exists again. */
  missing?(): void;
  /** The stream exists again after it was missing. */
  back?(): void;
  /** The missing streams were created again (`ok`), or creating them failed (retried at the next check). */
  streamsCreated?(ok: boolean, err?: unknown): void;
  /** The stream was recreated (its identity changed from `was` to `now`): its sequences restarted. */
  recreated?(was: string, now: string): void;
  /** After a recreation, the other streams or the feed could not be set up again: the next check retries. */
  recreateIncomplete?(err: unknown): void;
  /** A check failed for another reason than a missing stream (NATS unavailable): nothing changed. */
  checkFailed?(err: unknown): void;
}

/** What a {@link StreamCheck} needs. */
export interface StreamCheckDeps {
  /** The notification stream's identity (its creation); throws if it cannot be read. */
  readonly streamId: () => Promise<string>;
  /** Whether an error of `streamId` means the stream does not exist. */
  readonly isMissing: (err: unknown) => boolean;
  /** Creates every stream that does not exist, with the configured settings. */
  readonly ensureStreams: () => Promise<void>;
  /** Every chamber re-checks its mark before its next commit (a recreated stream restarted its sequences). */
  readonly wakeAll: () => void;
  /** Starts the wake-up feed again from now ({@link FeedWatch.restart}); throws if it cannot. */
  readonly restartFeed: () => Promise<void>;
  readonly observer?: StreamCheckObserver;
}

/**
 * Is the notification stream still the one we saw (ADR 0007)? Called now and then (every heartbeat
 * interval): a recreated stream wakes every worker, which re-checks (and re-bases its chamber) before
 * its next commit, and the other streams and the feed are set up again; a missing stream is created
 * again, so publishers and workers resume. One check runs at a time: during an outage checks wait on
 * timeouts and would pile up.
 */
export class StreamCheck {
  private known: string | undefined;
  private wasMissing = false;
  private checking = false;
  private stopped = false;

  constructor(private readonly deps: StreamCheckDeps) {}

  /** The stream's identity at the last check that read it (undefined before the first). */
  get streamId(): string | undefined {
    return this.known;
  }

  /** Whether the stream was missing at the last check. */
  get missing(): boolean {
    return this.wasMissing;
  }

  /**
   * Reads the stream's identity once, if none is known yet: the one later checks compare with.
   * @throws whatever `streamId` throws (the caller's startup retries).
   */
  async init(): Promise<void> {
    this.known ??= await this.deps.streamId();
  }

  /** No check after this one (shutdown). */
  stop(): void {
    this.stopped = true;
  }

  /** One check; does nothing while another runs, before {@link init} or after {@link stop}. Never throws. */
  async check(): Promise<void> {
    if (this.stopped || this.checking || this.known === undefined) return;
    this.checking = true;
    try {
      await this.checkOnce(this.known);
    } finally {
      this.checking = false;
    }
  }

  private async checkOnce(known: string): Promise<void> {
    const o = this.deps.observer;
    let id: string;
    try {
      id = await this.deps.streamId();
    } catch (err) {
      if (!this.deps.isMissing(err)) {
        o?.checkFailed?.(err);
        return;
      }
      if (!this.wasMissing) o?.missing?.();
      this.wasMissing = true;
      o?.status?.(true);
      await this.deps.ensureStreams().then(
        () => o?.streamsCreated?.(true),
        (e: unknown) => o?.streamsCreated?.(false, e),
      );
      return;
    }
    if (this.wasMissing) o?.back?.();
    this.wasMissing = false;
    o?.status?.(false);
    if (id === known) return;
    o?.recreated?.(known, id);
    this.deps.wakeAll();
    try {
      // A publisher may have recreated only the notification stream: NATS lost the alarm and
      // dead-letter streams with it, and outboxes would wait on them forever.
      await this.deps.ensureStreams();
      // The feed's ordered consumer would resume after its old position, past the new stream's
      // first sequences: start it again from now (workers re-read their chambers anyway).
      await this.deps.restartFeed();
    } catch (err) {
      // Not noted as seen: the next check wakes the workers again (harmless) and retries this.
      o?.recreateIncomplete?.(err);
      return;
    }
    this.known = id;
  }
}
