import { chamberKey, chamberStreamSubject, FencedError, type ChamberRef, type TraceRecord } from '@defender/contracts';
import type { EventSink, HistoryProvider, NotificationSource, PipelineObserver, PipelineStore, RunEvaluator } from './ports';
import type { ByteBudget, Semaphore } from './semaphore';
import { AttemptPolicy, StoppedSignal } from './worker/attempt-policy';
import { declaredTraceBytes, parseOnce, runIdOf, type Parsed } from './worker/notification';
import { OutboxPublisher } from './worker/outbox-publisher';
import { RunAttempt } from './worker/run-attempt';
import { RunIO } from './worker/run-io';
import { EventIO } from './worker/event-io';
import { StreamPosition, type RunMessage, type StreamStatus } from './worker/stream-position';

export { declaredTraceBytes } from './worker/notification';
export type { StreamStatus } from './worker/stream-position';

/** Settings of a {@link ChamberWorker}. */
export interface WorkerOptions {
  /** Stable ID of this defender (diagnostics, dead letters). */
  readonly ownerId: string;
  /** Bound on one attempt at a run, ms (PROCESS_TIMEOUT_SECONDS). */
  readonly processTimeoutMs: number;
  /** Attempts (failures other than outages) before a run is dead-lettered. */
  readonly maxAttempts: number;
  /** How long an idle worker waits for a notice before looking at the stream anyway, ms. */
  readonly idlePollMs: number;
  /** Largest trace accepted, in samples over all SVIDs; bigger ones are dead-lettered. */
  readonly maxTracePoints: number;
  /** Longest backoff while NATS or the store is unavailable, ms. */
  readonly maxOutageBackoffMs: number;
}

/** What a worker needs from the process. */
export interface WorkerDeps {
  readonly source: NotificationSource;
  readonly sink: EventSink;
  readonly store: PipelineStore;
  readonly evaluator: RunEvaluator;
  readonly cache: HistoryProvider;
  readonly semaphore: Semaphore;
  /**
   * Bounds the evaluations that read the chamber's whole history (Phase I completing, a baseline
   * extension) running at once across chambers; taken inside a run's slot of `semaphore`, for the
   * full read and the evaluation on it. Without it, as many as `semaphore` allows.
   */
  readonly fitSlots?: Semaphore;
  /**
   * Bounds the bytes of traces held by runs in flight (TRACE_MEMORY_MB): a run reserves its declared
   * size before its attempts (waiting does not count against the attempt timeout); an undeclared
   * size is charged once the trace is read. Without it, traces are not bounded.
   */
  readonly traceBudget?: ByteBudget;
  /**
   * Gives a read trace's memory back once the run is done with it (the store's
   * `releaseTraceMemory`): called after the evaluation, and for a trace read by an attempt that
   * failed before it. Must be safe to call twice. Without it, traces wait for the garbage collector.
   */
  readonly releaseTrace?: (trace: TraceRecord) => void;
  readonly observer?: PipelineObserver;
  readonly now: () => Date;
  readonly monotonic: () => number;
  /** Resolves after `ms`, or earlier when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Uniform [0, 1) for the outage backoff's jitter (default Math.random; a seeded one in tests). */
  readonly random?: () => number;
}

/**
 * Applies one chamber's runs, in stream order, exactly once, under a fencing epoch:
 *
 * 1. claims the chamber in the store for `epoch` (fencing every older owner) and resumes after the
 *    stored high-water mark, first publishing what the chamber's outbox holds above its
 *    published-through mark (a crash between commit and publish loses nothing, and what was
 *    acknowledged and marked is never published again, however long ago);
 * 2. for each notification after the mark: validates it, loads the trace and the history, evaluates,
 *    and commits points + alarms + hold + outbox events + run id + new mark in one fenced store
 *    operation, then publishes the outbox and raises its mark; a run id the chamber applied before
 *    (a re-published notification, of any age) is skipped: only the mark moves past it;
 * 3. bad input is dead-lettered (`dc.dead.<reason>`) and the mark moves past it; an outage (NATS,
 *    store) pauses the chamber and retries without counting attempts; other failures are retried
 *    `maxAttempts` times, then dead-lettered;
 * 4. a FencedError (a newer owner exists) stops the worker at once;
 * 5. the mark counts in one stream (its identity is stored with it): a notification is committed
 *    only after the source confirmed, after reading it, that the stream is still that one, and an
 *    idle worker checks it at every poll. A recreated stream (sequences restarted below the mark)
 *    pauses the chamber and re-bases it (stream offset := mark, fenced), so the new stream is read
 *    from its start and run ids applied before are skipped: nothing is skipped silently, nothing is
 *    applied twice (ADR 0007).
 *
 * The worker is the loop; its parts (libs/pipeline/src/lib/worker) are the chamber's place in the
 * stream ({@link StreamPosition}), retries and timeouts ({@link AttemptPolicy}), the run's store
 * reads and writes ({@link RunIO}), one attempt at a run ({@link RunAttempt}) and the outbox
 * ({@link OutboxPublisher}).
 */
export class ChamberWorker {
  private readonly abort = new AbortController();
  private wakeUp: (() => void) | undefined;
  private pendingNotice = false;
  private loop: Promise<void> | undefined;
  private inflightRun = false;
  private processed = 0;
  readonly key: string;
  private readonly subject: string;
  private readonly position: StreamPosition;
  private readonly policy: AttemptPolicy;
  private readonly io: RunIO;
  private readonly outbox: OutboxPublisher;
  private readonly attempt: RunAttempt;

  constructor(
    readonly chamber: ChamberRef,
    readonly epoch: number,
    private readonly deps: WorkerDeps,
    private readonly opts: WorkerOptions,
  ) {
    this.key = chamberKey(chamber);
    // The chamber's runs and equipment events, in the order the stream holds them (ADR 0019).
    this.subject = chamberStreamSubject(chamber.toolId, chamber.chamberId);
    const owner = { chamber, key: this.key, epoch, ownerId: opts.ownerId };
    this.position = new StreamPosition(chamber, this.key, epoch, deps);
    this.policy = new AttemptPolicy(this.key, this.abort.signal, opts, deps);
    this.io = new RunIO(owner, deps, this.policy.retry);
    this.outbox = new OutboxPublisher(chamber, this.key, epoch, deps);
    const events = new EventIO(owner, deps, this.policy.retry);
    this.attempt = new RunAttempt({ ...owner, maxTracePoints: opts.maxTracePoints }, { io: this.io, events, outbox: this.outbox, policy: this.policy }, deps);
  }

  get mark(): number {
    return this.position.mark;
  }
  /** The stream the chamber's mark counts in, its offset, and whether it matches the stream now. */
  get stream(): { readonly streamId: string | undefined; readonly offset: number; readonly status: StreamStatus } {
    return this.position.stream;
  }
  get busy(): boolean {
    return this.inflightRun;
  }
  get processedCount(): number {
    return this.processed;
  }
  get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** Starts the loop; `onExit` is called when it ends (stopped, fenced, or crashed). */
  start(onExit: (reason: 'stopped' | 'fenced' | 'error', err?: unknown) => void): void {
    this.loop = this.run().then(
      (r) => onExit(r),
      (err: unknown) => onExit('error', err),
    );
  }

  /** A new notification exists for this chamber at `sequence`. */
  notify(sequence: number): void {
    if (!this.position.isAhead(sequence)) return;
    this.pendingNotice = true;
    this.wakeUp?.();
  }

  /** Stops after the run in progress (if any) is finished; resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.abort.abort();
    this.wakeUp?.();
    await this.loop;
  }

  private async run(): Promise<'stopped' | 'fenced'> {
    const signal = this.abort.signal;
    const { policy, position } = this;
    try {
      await policy.outageRetry('claim', async () => {
        position.adopt(await this.deps.store.chamberState.claim(this.chamber, this.epoch, this.opts.ownerId, this.deps.now()));
      });
      // The outbox counts in store sequences: it does not depend on the stream.
      if (position.mark > 0) await policy.outageRetry('publish', () => this.outbox.publishPending(true));
      await policy.outageRetry('stream', () => position.sameStream());
      while (!signal.aborted) {
        this.pendingNotice = false;
        const raw = await policy.outageRetry('read', () => this.deps.source.next(this.subject, position.nextStreamSequence));
        if (signal.aborted) break;
        if (!raw) {
          await this.idle();
          if (!signal.aborted) await policy.outageRetry('stream', () => position.sameStream());
          continue;
        }
        // Read from the stream the mark counts in? Asked after the read, so a stream recreated before
        // it or during it is seen; a recreated one re-bases the chamber and this read is dropped.
        if (!(await policy.outageRetry('stream', () => position.sameStream()))) continue;
        if (signal.aborted) break;
        const msg = position.toRun(raw);
        const release = await this.deps.semaphore.acquire();
        try {
          if (signal.aborted) break;
          this.inflightRun = true;
          await this.process(msg);
        } finally {
          this.inflightRun = false;
          release();
        }
      }
      return 'stopped';
    } catch (err) {
      if (err instanceof FencedError) {
        this.deps.observer?.fenced?.(this.key, this.epoch, err);
        this.abort.abort();
        return 'fenced';
      }
      if (err instanceof StoppedSignal) return 'stopped';
      throw err;
    }
  }

  /**
   * Waits for a notice or the idle poll. Each wait owns its timer and wake-up callback: a finished
   * wait cancels its timer and clears the callback only if it is still its own, so an old timer can
   * never swallow a newer wait's wake-up.
   */
  private idle(): Promise<void> {
    if (this.pendingNotice) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = new AbortController();
      const onStop = () => timer.abort();
      this.abort.signal.addEventListener('abort', onStop, { once: true });
      const done = () => {
        if (this.wakeUp === done) this.wakeUp = undefined;
        this.abort.signal.removeEventListener('abort', onStop);
        timer.abort();
        resolve();
      };
      this.wakeUp = done;
      void this.deps.sleep(this.opts.idlePollMs, timer.signal).then(done);
    });
  }

  /** Handles one run: its trace's declared memory reserved, attempted until it is applied, skipped or dead-lettered. */
  private async process(msg: RunMessage): Promise<void> {
    const started = this.deps.monotonic();
    this.deps.observer?.received?.(this.key, msg.sequence);
    // Parsed once per run; a parse failure is rethrown by each attempt and handled there as before
    // (bad input is dead-lettered by the first one).
    const parsed = parseOnce(msg);
    const declared = 'n' in parsed ? declaredTraceBytes(parsed.n, this.opts.maxTracePoints) : 0;
    const releaseBudget = declared > 0 && this.deps.traceBudget ? await this.deps.traceBudget.acquire(declared) : undefined;
    try {
      await this.attempts(msg, parsed, started, releaseBudget ? declared : 0);
    } finally {
      releaseBudget?.();
    }
  }

  private async attempts(msg: RunMessage, parsed: Parsed, started: number, reserved: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = await this.policy.withTimeout(() => this.attempt.run(msg, parsed, reserved, this.position.mark));
        this.position.advance(msg.sequence);
        this.processed++;
        this.deps.observer?.processed?.(this.key, msg.sequence, this.deps.monotonic() - started, outcome);
        return;
      } catch (err) {
        const decision = this.policy.decide(err, attempt, () => runIdOf(msg));
        switch (decision.kind) {
          case 'rethrow':
            throw err;
          case 'pause':
            // Outages are retried inside; reaching here means one escaped a step: pause and retry the run.
            await this.policy.pauseRun(err);
            attempt--;
            continue;
          case 'retry':
            this.deps.observer?.failedAttempt?.(this.key, msg.sequence, attempt, err);
            continue;
          case 'dead-letter':
            if (decision.failedAttempt) this.deps.observer?.failedAttempt?.(this.key, msg.sequence, attempt, err);
            await this.io.deadLetter(msg, { reason: decision.reason, detail: decision.detail, runId: decision.runId, attempts: attempt });
            this.position.advance(msg.sequence);
            this.deps.observer?.deadLettered?.(this.key, msg.sequence, decision.reason, decision.detail);
            return;
        }
      }
    }
  }
}
