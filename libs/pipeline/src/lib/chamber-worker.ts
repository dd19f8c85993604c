import { backoffDelayMs } from '@defender/backoff';
import {
  ChamberRef,
  ChamberState,
  chamberKey,
  CommitRunResult,
  CorruptRecordError,
  DeadLetter,
  deadLetterRecord,
  DeadLetterReason,
  DEAD_LETTER_REASONS,
  FencedError,
  InvalidMessageError,
  InvalidRecordError,
  notificationSubject,
  observeTrace,
  OutboxEventInput,
  parseNotificationSubject,
  parseRunNotification,
  RunNotification,
  RunPointSet,
  StrategyRecord,
  StrategyScopeInfo,
  strategyScopesForRun,
  TraceNotFoundError,
  TraceRecord,
} from '@defender/contracts';
import { EventSink, HistoryProvider, NotificationMessage, NotificationSource, PipelineObserver, PipelineStore, RunEvaluator } from './ports';
import { markAfter, publishedPrefix, runEvents } from './outbox';
import { HistoryTooShortError } from './evaluator/errors';
import { ByteBudget, Semaphore } from './semaphore';

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

class DeadLetterSignal extends Error {
  override readonly name = 'DeadLetterSignal';
  constructor(
    readonly reason: DeadLetterReason,
    readonly detail: string,
    readonly runId: string,
  ) {
    super(`${reason}: ${detail}`);
  }
}

class AttemptTimeoutError extends Error {
  override readonly name = 'AttemptTimeoutError';
}

/** One attempt at a run: told to stop when it timed out; time paused by outages (ms, monotonic). */
interface AttemptState {
  readonly abandoned: AbortSignal;
  outageMs: number;
  /**
   * Time the attempt spent evaluating its run (and waiting for a fit slot, i.e. for other runs'
   * evaluations): bounded CPU work that cannot hang, so it does not count
   * against the attempt's timeout (on a saturated machine a Phase I fit of thousands of indicators
   * outlasted the timeout; the attempt was abandoned at its next write and the fit done again, up to
   * a dead letter of a valid run).
   */
  evaluationMs: number;
  /** Start of the outage pause in progress (the failed call, then the backoff). */
  pausedSince: number | undefined;
  /** Calls of the attempt paused now (its reads run concurrently and pause together). */
  pausedCalls: number;
}

function isOutage(err: unknown): boolean {
  return (err as { retryable?: unknown } | null)?.retryable === true;
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
 */
export class ChamberWorker {
  private readonly abort = new AbortController();
  private wakeUp: (() => void) | undefined;
  private pendingNotice = false;
  private loop: Promise<void> | undefined;
  private highWaterMark = 0;
  /** The stream the mark counts in (undefined until bound) and what its sequences add up to in the store. */
  private boundStream: string | undefined;
  private streamOffset = 0;
  private streamStatus: StreamStatus = 'unbound';
  /** The attempt in progress, if any (see withTimeout). */
  private currentAttempt: AttemptState | undefined;
  private inflightRun = false;
  private processed = 0;
  /**
   * True while this owner knows the chamber's outbox holds nothing above its published-through
   * mark: set when a {@link publishOutbox} pass found it empty, cleared before anything that may
   * leave it otherwise. Then a run's events, which its commit just stored, are all the outbox holds,
   * and they are published as committed without reading them back (see {@link publishCommitted}).
   */
  private outboxEmpty = false;
  readonly key: string;
  private readonly subject: string;

  constructor(
    readonly chamber: ChamberRef,
    readonly epoch: number,
    private readonly deps: WorkerDeps,
    private readonly opts: WorkerOptions,
  ) {
    this.key = chamberKey(chamber);
    this.subject = notificationSubject(chamber.toolId, chamber.chamberId);
  }

  get mark(): number {
    return this.highWaterMark;
  }
  /** The stream the chamber's mark counts in, its offset, and whether it matches the stream now. */
  get stream(): { readonly streamId: string | undefined; readonly offset: number; readonly status: StreamStatus } {
    return { streamId: this.boundStream, offset: this.streamOffset, status: this.streamStatus };
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
    if (sequence <= this.highWaterMark - this.streamOffset) return;
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
    try {
      await this.outageRetry('claim', async () => {
        const state = await this.deps.store.chamberState.claim(this.chamber, this.epoch, this.opts.ownerId, this.deps.now());
        this.adoptState(state);
      });
      // The outbox counts in store sequences: it does not depend on the stream.
      if (this.highWaterMark > 0) await this.outageRetry('publish', () => this.publishOutbox(true));
      await this.outageRetry('stream', () => this.sameStream());
      while (!signal.aborted) {
        this.pendingNotice = false;
        const raw = await this.outageRetry('read', () => this.deps.source.next(this.subject, this.highWaterMark - this.streamOffset + 1));
        if (signal.aborted) break;
        if (!raw) {
          await this.idle();
          if (!signal.aborted) await this.outageRetry('stream', () => this.sameStream());
          continue;
        }
        // Read from the stream the mark counts in? Asked after the read, so a stream recreated before
        // it or during it is seen; a recreated one re-bases the chamber and this read is dropped.
        if (!(await this.outageRetry('stream', () => this.sameStream()))) continue;
        if (signal.aborted) break;
        const msg: RunMessage = { ...raw, sequence: this.streamOffset + raw.sequence, streamSequence: raw.sequence };
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

  private adoptState(state: ChamberState): void {
    this.highWaterMark = state.highWaterMark;
    this.boundStream = state.streamId;
    this.streamOffset = state.streamOffset ?? 0;
  }

  /**
   * True when the stream is the one the mark counts in. Otherwise binds the chamber to the stream
   * as it is now and returns false (the caller reads again from the new position): a mark recorded
   * without an identity adopts the stream once; a mark of another (recreated) stream is re-based
   * onto it, fenced, and until that succeeds the chamber stays paused (retried like an outage).
   */
  private async sameStream(): Promise<boolean> {
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
    this.adoptState(state);
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

  /**
   * Runs `fn`, retrying with backoff while NATS or the store is unavailable. Inside an attempt, the
   * time lost to the outage (the failed call and the backoff) extends the attempt's timeout, and an
   * attempt that timed out stops at its next step.
   */
  private async outageRetry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const inAttempt = this.currentAttempt;
    for (let attempt = 0; ; attempt++) {
      if (this.abort.signal.aborted && what !== 'commit') throw new StoppedSignal();
      if (inAttempt?.abandoned.aborted) throw new AttemptTimeoutError(`abandoned at ${what}: the attempt timed out`);
      const t0 = this.deps.monotonic();
      try {
        return await fn();
      } catch (err) {
        if (!isOutage(err)) throw err;
        // The failed call counts as paused, and so does the backoff while it lasts; concurrent calls
        // paused by the same outage count once, from the first failure to the last resumption.
        if (inAttempt && inAttempt.pausedCalls++ === 0) inAttempt.pausedSince = t0;
        this.deps.observer?.paused?.(this.key, what, err);
        const delay = backoffDelayMs(attempt, { baseMs: 100, maxMs: Math.max(100, this.opts.maxOutageBackoffMs), random: this.deps.random ?? Math.random });
        try {
          await this.sleepUnless(delay, inAttempt?.abandoned);
        } finally {
          if (inAttempt && --inAttempt.pausedCalls === 0) {
            inAttempt.outageMs += this.deps.monotonic() - (inAttempt.pausedSince ?? t0);
            inAttempt.pausedSince = undefined;
          }
        }
        if (this.abort.signal.aborted) throw new StoppedSignal();
      }
    }
  }

  /** Sleeps `ms`, waking early when the worker stops or `abandoned` (an attempt's) aborts. */
  private async sleepUnless(ms: number, abandoned: AbortSignal | undefined): Promise<void> {
    if (!abandoned) return this.deps.sleep(ms, this.abort.signal);
    const wake = new AbortController();
    const onAbort = () => wake.abort();
    this.abort.signal.addEventListener('abort', onAbort, { once: true });
    abandoned.addEventListener('abort', onAbort, { once: true });
    try {
      if (this.abort.signal.aborted || abandoned.aborted) return;
      await this.deps.sleep(ms, wake.signal);
    } finally {
      this.abort.signal.removeEventListener('abort', onAbort);
      abandoned.removeEventListener('abort', onAbort);
    }
  }

  private async process(msg: RunMessage): Promise<void> {
    const started = this.deps.monotonic();
    this.deps.observer?.received?.(this.key, msg.sequence);
    // Parsed once per run; a parse failure is rethrown by each attempt and handled there as before
    // (bad input is dead-lettered by the first one).
    let parsed: Parsed;
    try {
      parsed = { n: this.parse(msg) };
    } catch (error) {
      parsed = { error };
    }
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
        const outcome = await this.withTimeout(() => this.attempt(msg, parsed, reserved));
        this.highWaterMark = msg.sequence;
        this.processed++;
        this.deps.observer?.processed?.(this.key, msg.sequence, this.deps.monotonic() - started, outcome);
        return;
      } catch (err) {
        if (err instanceof FencedError || err instanceof StoppedSignal) throw err;
        if (err instanceof DeadLetterSignal) {
          await this.deadLetter(msg, err.reason, err.detail, err.runId, attempt);
          return;
        }
        if (isOutage(err)) {
          // Outages are retried inside; reaching here means one escaped a step: pause and retry the run.
          this.deps.observer?.paused?.(this.key, 'process', err);
          await this.deps.sleep(Math.min(this.opts.maxOutageBackoffMs, 500), this.abort.signal);
          if (this.abort.signal.aborted) throw new StoppedSignal();
          attempt--;
          continue;
        }
        this.deps.observer?.failedAttempt?.(this.key, msg.sequence, attempt, err);
        if (attempt >= this.opts.maxAttempts) {
          const detail = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
          await this.deadLetter(msg, 'processing-failed', `${attempt} attempts; last: ${detail}`, runIdOf(msg), attempt);
          return;
        }
      }
    }
  }

  /**
   * Runs one attempt bounded by `processTimeoutMs` of its own waiting: time paused by an outage does
   * not count (a store or NATS outage pauses the chamber; it must never use up the attempts and
   * dead-letter a valid run), nor does the evaluation, which is bounded CPU work (its result would
   * only be thrown away and computed again). When the bound is reached, the attempt is told to stop at its next
   * step, and the next attempt starts only after it has ended: two attempts at one run never
   * overlap (an abandoned attempt that committed late made its retry see the run as a duplicate,
   * or the dead letter of a run race its commit; found by the chaos suite's store outage). If it
   * committed after all, its outcome counts.
   */
  private async withTimeout<T>(run: () => Promise<T>): Promise<T> {
    const ctl = new AbortController();
    const state: AttemptState = { abandoned: ctl.signal, outageMs: 0, evaluationMs: 0, pausedSince: undefined, pausedCalls: 0 };
    // Attempts never overlap, so the one in progress is the worker's (outageRetry reads it).
    this.currentAttempt = state;
    try {
      const started = this.deps.monotonic();
      const p = run();
      const timer = new AbortController();
      const timeout = (async (): Promise<'timeout' | undefined> => {
        for (;;) {
          const now = this.deps.monotonic();
          const paused = state.outageMs + state.evaluationMs + (state.pausedSince === undefined ? 0 : now - state.pausedSince);
          const left = started + this.opts.processTimeoutMs + paused - now;
          if (left <= 0) return 'timeout';
          await this.deps.sleep(left, timer.signal);
          if (timer.signal.aborted) return undefined;
        }
      })();
      try {
        const first = await Promise.race([p.then((value) => ({ value })), timeout]);
        if (first !== 'timeout' && first !== undefined) return first.value;
      } finally {
        timer.abort();
      }
      ctl.abort();
      try {
        return await p;
      } catch (err) {
        if (err instanceof FencedError || err instanceof StoppedSignal || err instanceof DeadLetterSignal) throw err;
        throw new AttemptTimeoutError(`run took longer than ${this.opts.processTimeoutMs} ms`, { cause: err });
      }
    } finally {
      // Reads issued ahead by an attempt that failed first stop at their next retry.
      ctl.abort();
      this.currentAttempt = undefined;
    }
  }

  private parse(msg: NotificationMessage): RunNotification {
    let n: RunNotification;
    try {
      n = parseRunNotification(msg.data);
    } catch (err) {
      if (!(err instanceof InvalidMessageError)) throw err;
      throw new DeadLetterSignal(err.reason === 'invalid-json' ? 'invalid-json' : 'invalid-notification', err.message, runIdOf(msg));
    }
    const subj = parseNotificationSubject(msg.subject);
    if (!subj || subj.toolId !== n.toolId || subj.chamberId !== n.chamberId) {
      throw new DeadLetterSignal('subject-mismatch', `payload names ${n.toolId}:${n.chamberId} but subject is ${msg.subject}`, n.runId);
    }
    return n;
  }

  /**
   * The newest committed runs of the chamber, `limit` of them (default: what the strategy needs in the
   * steady state). A read for the steady state may lack the points only a baseline fit reads: an
   * evaluation that may fit asks for the full history (`HistoryTooShortError`), read with every point.
   */
  private async history(strategy: RunStrategy | undefined, limit?: number): Promise<{ runs: RunPointSet[]; limit: number }> {
    const doc = strategy?.record.document;
    const runs = limit ?? Math.max(1, this.deps.evaluator.historyRuns(doc, strategy?.scope));
    const allPoints = limit !== undefined || runs >= this.deps.evaluator.fullHistoryRuns(doc, strategy?.scope);
    return { runs: await this.outageRetry('history', () => this.deps.cache.history(this.chamber, { limit: runs, highWaterMark: this.highWaterMark, allPoints })), limit: runs };
  }

  /** Reads the run's trace; a missing or unreadable one is bad input (dead-lettered). */
  private async readTrace(n: RunNotification): Promise<{ trace: TraceRecord; readMs: number }> {
    const t1 = this.deps.monotonic();
    try {
      const trace = await this.outageRetry('trace', () => this.deps.store.traces.read({ ...this.chamber, runId: n.runId }));
      return { trace, readMs: this.deps.monotonic() - t1 };
    } catch (err) {
      if (err instanceof TraceNotFoundError) throw new DeadLetterSignal('missing-trace', err.message, n.runId);
      if (err instanceof CorruptRecordError) throw new DeadLetterSignal('corrupt-trace', err.message, n.runId);
      throw err;
    }
  }

  /**
   * Evaluates the run and summarizes the trace for the weights; the trace (the big allocation of a
   * run) is referenced only inside, so it can be collected before the commit and the publications;
   * what the reservation (`reserved` bytes) does not cover is charged to the trace budget while the
   * trace is held.
   */
  private async evaluateTrace(
    msg: NotificationMessage,
    n: RunNotification,
    read: { trace: TraceRecord; readMs: number },
    ctx: Pick<Parameters<RunEvaluator['evaluate']>[0], 'history' | 'historyLimit' | 'limits' | 'strategy' | 'strategyScope'>,
    reserved: number,
    moreHistory: (runs: number) => Promise<{ runs: RunPointSet[]; limit: number }>,
  ): Promise<{ evaluation: ReturnType<RunEvaluator['evaluate']>; observation: ReturnType<typeof observeTrace> }> {
    const { trace } = read;
    const extra = traceBytes(trace) - reserved;
    const release = extra > 0 ? this.deps.traceBudget?.charge(extra) : undefined;
    try {
      let samples = 0;
      for (const s of trace.svids.values()) samples += s.length;
      if (samples === 0) throw new DeadLetterSignal('invalid-trace', 'the trace holds no samples', n.runId);
      if (samples > this.opts.maxTracePoints) {
        throw new DeadLetterSignal('trace-too-large', `${samples} samples exceed the limit of ${this.opts.maxTracePoints}`, n.runId);
      }
      this.deps.observer?.stage?.('trace', read.readMs);
      this.deps.observer?.traceSamples?.(this.key, samples);

      let evaluationMs = 0;
      const judge = (history: Pick<typeof ctx, 'history' | 'historyLimit'>) => {
        const t2 = this.deps.monotonic();
        try {
          // The run's own completion time stamps what it creates (limit sets, models): an attempt retried
          // after a timeout that left some of them written creates the same records (idempotent writes),
          // where the clock would make them conflict with the ones already stored.
          return this.deps.evaluator.evaluate({ chamber: this.chamber, sequence: msg.sequence, notification: n, trace, ...ctx, ...history, now: new Date(n.completedAt) });
        } catch (err) {
          // Input the evaluator can never use (e.g. a malformed trace) is dead-lettered at once, not retried.
          const reason = (err as { deadLetterReason?: unknown } | null)?.deadLetterReason;
          if (typeof reason === 'string' && (DEAD_LETTER_REASONS as readonly string[]).includes(reason)) {
            throw new DeadLetterSignal(reason as DeadLetterReason, (err as Error).message, n.runId);
          }
          throw err;
        } finally {
          evaluationMs += this.deps.monotonic() - t2;
        }
      };
      let evaluation;
      try {
        evaluation = judge(ctx);
      } catch (err) {
        // The steady state's history was not enough for this run (Phase I completes, a chart reads
        // further back): read as much as it asks for and judge it again.
        if (!(err instanceof HistoryTooShortError)) throw err;
        // The whole history and a fit on it are a run's largest transient: a few at a time (fitSlots).
        // Waiting for a slot, like evaluating, is bounded work of other runs: not against the timeout.
        const waitFrom = this.deps.monotonic();
        const releaseFit = await this.deps.fitSlots?.acquire();
        const waitedMs = this.deps.monotonic() - waitFrom;
        if (this.currentAttempt) this.currentAttempt.evaluationMs += waitedMs;
        try {
          const more = await moreHistory(err.runs);
          evaluation = judge({ history: more.runs, historyLimit: more.limit });
        } finally {
          releaseFit?.();
        }
      }
      if (this.currentAttempt) this.currentAttempt.evaluationMs += evaluationMs;
      this.deps.observer?.stage?.('evaluate', evaluationMs);
      return { evaluation, observation: observeTrace(trace, this.deps.now()) };
    } finally {
      this.releaseTrace(trace);
      release?.();
    }
  }

  private async attempt(msg: NotificationMessage, parsed: Parsed, reserved: number): Promise<CommitRunResult['outcome']> {
    if (!('n' in parsed)) throw parsed.error;
    const n = parsed.n;
    // Refuse a declared-huge trace before reading it (it would be held in memory whole).
    const declared = n.trace.samples !== undefined ? n.trace.samples * n.svids.length : undefined;
    if (declared !== undefined && declared > this.opts.maxTracePoints) {
      throw new DeadLetterSignal('trace-too-large', `${declared} samples declared exceed the limit of ${this.opts.maxTracePoints}`, n.runId);
    }
    const t0 = this.deps.monotonic();
    // The reads do not depend on each other (except the history's length on the strategy), so they
    // are issued at once: with a remote store the run waits for the slowest, not for their sum. They
    // are looked at in the order below, so a run that is bad in several ways is dead-lettered for the
    // same reason as when they were read one after the other.
    const strategyP = handled(this.strategyFor(n));
    const historyP = handled(strategyP.then((strategy) => this.history(strategy)));
    const limitsP = handled(this.outageRetry('limits', () => this.deps.store.uchart.currentLimitSets(this.chamber)));
    const metaP = handled(this.outageRetry('metadata', () => this.deps.store.chamberMetadata.get(this.chamber)));
    const traceP = handled(this.readTrace(n));
    const appliedP = handled(this.outageRetry('applied', () => this.deps.store.chamberState.appliedRun(this.chamber, n.runId)));
    try {
      return await this.apply(msg, n, { strategyP, historyP, limitsP, metaP, traceP, appliedP }, reserved, t0);
    } finally {
      // A trace read by an attempt that failed before evaluating it (evaluated ones are released already).
      if (this.deps.releaseTrace) traceP.then((r) => this.releaseTrace(r.trace), () => undefined);
    }
  }

  /**
   * The strategy that judges the run: the newest version in the first scope of the run's lookup order
   * (contracts `strategyScopesForRun`) that holds one, read in one store call; undefined when no scope
   * does (the built-in default). Only the winner counts: if its document is invalid, or its own scope
   * disagrees with its key, the evaluator refuses it and the run is dead-lettered (`invalid-strategy`),
   * never judged by a less specific scope or the default.
   */
  private async strategyFor(n: RunNotification): Promise<RunStrategy | undefined> {
    let scopes: readonly StrategyScopeInfo[];
    try {
      scopes = strategyScopesForRun(this.chamber, n.recipe);
    } catch (err) {
      if (!(err instanceof InvalidRecordError)) throw err;
      throw new DeadLetterSignal('invalid-notification', `no strategy scope can be built for recipe ${JSON.stringify(n.recipe)}: ${err.message}`, n.runId);
    }
    const found = await this.outageRetry('strategy', () => this.deps.store.strategies.latest(scopes.map((s) => s.scope)));
    const record = found[0];
    if (!record) {
      this.deps.observer?.strategyFound?.(this.key, undefined);
      return undefined;
    }
    const scope = scopes.find((s) => s.scope === record.scope);
    // The store answers for the scopes it was asked; anything else is a broken store, not a strategy.
    if (!scope) throw new Error(`the store returned a strategy of scope "${record.scope}", which was not asked for (${scopes.map((s) => s.scope).join(', ')})`);
    this.deps.observer?.strategyFound?.(this.key, scope);
    return { record, scope };
  }

  /** Gives a trace's memory back; a failure to do so only leaves it to the garbage collector. */
  private releaseTrace(trace: TraceRecord): void {
    try {
      this.deps.releaseTrace?.(trace);
    } catch (err) {
      this.deps.observer?.releaseFailed?.(this.key, err);
    }
  }

  /** The rest of an attempt, once its reads are issued. */
  private async apply(
    msg: NotificationMessage,
    n: RunNotification,
    reads: {
      strategyP: Promise<RunStrategy | undefined>;
      historyP: Promise<{ runs: RunPointSet[]; limit: number }>;
      limitsP: Promise<Awaited<ReturnType<PipelineStore['uchart']['currentLimitSets']>>>;
      metaP: Promise<Awaited<ReturnType<PipelineStore['chamberMetadata']['get']>>>;
      traceP: Promise<{ trace: TraceRecord; readMs: number }>;
      appliedP: Promise<number | undefined>;
    },
    reserved: number,
    t0: number,
  ): Promise<CommitRunResult['outcome']> {
    const { strategyP, historyP, limitsP, metaP, traceP, appliedP } = reads;
    // A run id the chamber applied at another sequence (its notification published again, at any
    // age) is skipped before it is evaluated (which could write limit sets); the commit decides.
    const appliedAt = await appliedP;
    if (appliedAt !== undefined && appliedAt !== msg.sequence) return this.skipDuplicate(msg, n);
    const [strategy, read, limits] = await Promise.all([strategyP, historyP, limitsP]);
    this.deps.observer?.stage?.('history', this.deps.monotonic() - t0);
    const meta = await metaP;
    if (!meta) throw new DeadLetterSignal('unknown-chamber', `${this.key} has no chamber metadata`, n.runId);

    const { evaluation, observation } = await this.evaluateTrace(
      msg,
      n,
      await traceP,
      { history: read.runs, historyLimit: read.limit, limits, strategy: strategy?.record.document, ...(strategy ? { strategyScope: strategy.scope } : {}) },
      reserved,
      (runs) => this.history(strategy, runs),
    );
    if (evaluation.points.length === 0 && evaluation.skipped.length > 0) {
      throw new DeadLetterSignal(
        'no-indicators',
        `no indicator produced a point: ${evaluation.skipped.slice(0, 5).map((s) => `${s.indicatorKey}: ${s.reason}`).join('; ')}`,
        n.runId,
      );
    }

    const committedAt = this.deps.now();
    const events = runEvents(this.chamber, { sequence: msg.sequence, runId: n.runId, recipe: n.recipe, epoch: this.epoch, ownerId: this.opts.ownerId }, evaluation.alarms, evaluation.hold);
    const t3 = this.deps.monotonic();
    for (const ls of evaluation.newLimitSets) {
      await this.outageRetry('limits', () => this.deps.store.uchart.putLimitSet(ls));
    }
    const result = await this.outageRetry('commit', () =>
      this.deps.store.chamberState.commitRun({
        chamber: this.chamber,
        epoch: this.epoch,
        ownerId: this.opts.ownerId,
        sequence: msg.sequence,
        runId: n.runId,
        recipe: n.recipe,
        committedAt,
        points: evaluation.points,
        alarms: evaluation.alarms,
        ...(evaluation.hold ? { hold: evaluation.hold } : {}),
        events,
      }),
    );
    this.deps.observer?.stage?.('commit', this.deps.monotonic() - t3);
    // Applied at another sequence after all (a concurrent commit the early check could not see).
    if (result.outcome === 'duplicate-run') return result.outcome;
    const committed: RunPointSet = {
      ...this.chamber,
      sequence: msg.sequence,
      runId: n.runId,
      epoch: this.epoch,
      committedAt: this.deps.now(),
      recipe: n.recipe,
      points: evaluation.points,
    };
    this.deps.cache.record(committed);
    if (result.outcome === 'applied') {
      // Input for the scheduled weight recompute, written while the alarms are published; a lost
      // observation only makes the weight less fresh.
      const recorded = this.deps.store.chamberMetadata.recordObservation(observation).catch((err: unknown) => {
        this.deps.observer?.paused?.(this.key, 'observation', err);
      });
      try {
        if (events.length > 0) await this.outageRetry('publish', () => this.publishCommitted(events, msg.sequence));
      } finally {
        await recorded;
      }
    } else {
      // A replay of the run at its own sequence (an attempt that committed after it was abandoned):
      // whatever of the outbox is still unpublished goes out now.
      await this.outageRetry('publish', () => this.publishOutbox(false));
    }
    return result.outcome;
  }

  /** Moves the mark past a run id applied before: nothing of it is written or published again. */
  private async skipDuplicate(msg: NotificationMessage, n: RunNotification): Promise<CommitRunResult['outcome']> {
    const result = await this.outageRetry('commit', () =>
      this.deps.store.chamberState.commitRun({ chamber: this.chamber, epoch: this.epoch, ownerId: this.opts.ownerId, sequence: msg.sequence, runId: n.runId, committedAt: this.deps.now(), points: [] }),
    );
    return result.outcome;
  }

  /**
   * The outbox: publishes the chamber's events above the published-through mark in order, one after
   * the other (each once the stream acknowledged the one before), with their stored ids and
   * payloads, and raises the mark to the last whole run published. Fenced: a deposed owner's mark is
   * refused (FencedError stops the worker), so it never marks more than it published; the next owner
   * publishes the rest. With `afterClaim`, entries a previous owner published but did not mark are
   * recognised in the stream (its newest message per subject) and not published again.
   */
  private async publishOutbox(afterClaim: boolean): Promise<void> {
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
  private async publishCommitted(events: readonly OutboxEventInput[], sequence: number): Promise<void> {
    if (!this.outboxEmpty) return this.publishOutbox(false);
    this.outboxEmpty = false;
    for (const [index, e] of events.entries()) {
      await this.deps.sink.publish(e.subject, e.payload, e.msgId);
      this.deps.observer?.published?.(this.key, { ...e, ...this.chamber, sequence, index });
    }
    await this.deps.store.outbox.markPublished(this.chamber, this.epoch, sequence);
    this.outboxEmpty = true;
  }

  private async deadLetter(msg: RunMessage, reason: DeadLetterReason, detail: string, runId: string, attempts: number): Promise<void> {
    const dl: DeadLetter = deadLetterRecord({
      reason,
      detail,
      subject: msg.subject,
      streamSequence: msg.streamSequence,
      payload: msg.data,
      defenderId: this.opts.ownerId,
      attempts,
      deadLetteredAt: this.deps.now().toISOString(),
    });
    await this.outageRetry('dead-letter', () => this.deps.sink.publish(`dc.dead.${reason}`, JSON.stringify(dl), `dead:${this.key}:${msg.sequence}`));
    // Move the mark past it (no points), fenced like any commit, so the chamber goes on.
    const deadRunId = `dead-letter:${msg.sequence}:${runId}`.slice(0, 128);
    await this.outageRetry('commit', () =>
      this.deps.store.chamberState.commitRun({
        chamber: this.chamber,
        epoch: this.epoch,
        ownerId: this.opts.ownerId,
        sequence: msg.sequence,
        runId: deadRunId,
        committedAt: this.deps.now(),
        points: [],
      }),
    );
    this.deps.cache.record({ ...this.chamber, sequence: msg.sequence, runId: deadRunId, epoch: this.epoch, committedAt: this.deps.now(), points: [] });
    this.highWaterMark = msg.sequence;
    this.deps.observer?.deadLettered?.(this.key, msg.sequence, reason, detail);
  }
}

/**
 * `p`, marked as handled: a read issued ahead that is not awaited because the attempt failed first
 * must not be reported as an unhandled rejection (whoever awaits `p` still sees its error).
 */
function handled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/** Where a chamber's mark stands against the stream: not yet bound, bound to it, or recorded with another. */
export type StreamStatus = 'unbound' | 'bound' | 'mismatch';

/**
 * A notification as the worker handles it: `sequence` is the store's (the stream's plus the
 * chamber's stream offset), `streamSequence` the stream's own.
 */
interface RunMessage extends NotificationMessage {
  readonly streamSequence: number;
}

/** Outbox entries read at once. */
const OUTBOX_PAGE = 1000;

/** The stored strategy that judges a run, and the scope of the run's lookup order it was found under. */
interface RunStrategy {
  readonly record: StrategyRecord;
  readonly scope: StrategyScopeInfo;
}

/** A run's notification as parsed once, or why it could not be. */
type Parsed = { readonly n: RunNotification } | { readonly error: unknown };

class StoppedSignal extends Error {
  override readonly name = 'StoppedSignal';
}

/** Bytes a trace's arrays occupy (SVIDs and explicit times). */
function traceBytes(trace: TraceRecord): number {
  let bytes = trace.timing.kind === 'explicit' ? trace.timing.timesSeconds.byteLength : 0;
  for (const a of trace.svids.values()) bytes += a.byteLength;
  return bytes;
}

/**
 * Memory a notification's trace will take, from its declared samples per SVID (at most 8 bytes
 * each; explicit sample times, if any, are charged once read); 0 when it declares none or exceeds
 * the trace limit (it is dead-lettered before any read).
 */
export function declaredTraceBytes(n: Pick<RunNotification, 'trace' | 'svids'>, maxTracePoints: number): number {
  const samples = n.trace.samples;
  if (samples === undefined || samples * n.svids.length > maxTracePoints) return 0;
  return samples * n.svids.length * 8;
}

function runIdOf(msg: NotificationMessage): string {
  try {
    const v = JSON.parse(Buffer.from(msg.data).toString('utf8')) as { runId?: unknown };
    if (typeof v.runId === 'string' && v.runId.length > 0 && v.runId.length <= 100) return v.runId;
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
  }
  return `seq-${msg.sequence}`;
}
