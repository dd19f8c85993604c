import {
  AlarmInput,
  ChamberRef,
  chamberKey,
  CorruptRecordError,
  DeadLetter,
  DeadLetterReason,
  DEAD_LETTER_REASONS,
  FencedError,
  HoldInput,
  InvalidMessageError,
  notificationSubject,
  observeTrace,
  parseNotificationSubject,
  parseRunNotification,
  RunNotification,
  RunPointSet,
  TraceNotFoundError,
} from '@defender/contracts';
import { EventSink, HistoryProvider, NotificationMessage, NotificationSource, PipelineObserver, PipelineStore, RunEvaluator } from './ports';
import { Semaphore } from './semaphore';

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
  readonly observer?: PipelineObserver;
  readonly now: () => Date;
  readonly monotonic: () => number;
  /** Resolves after `ms`, or earlier when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
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

function isOutage(err: unknown): boolean {
  return (err as { retryable?: unknown } | null)?.retryable === true;
}

/** Message id of an alarm or hold publication: one per (chamber, run, rule, indicator). */
export function alarmMsgId(chamber: string, sequence: number, kind: 'alarm' | 'hold', a: { ruleId: string; indicatorKey?: string }): string {
  return `${kind}:${chamber}:${sequence}:${a.ruleId}:${a.indicatorKey ?? '*'}`;
}

/**
 * Applies one chamber's runs, in stream order, exactly once, under a fencing epoch:
 *
 * 1. claims the chamber in the store for `epoch` (fencing every older owner) and resumes after the
 *    stored high-water mark, first re-publishing the alarms and hold of the last committed run (an
 *    outbox: a crash between commit and publish loses nothing; publications are deduplicated);
 * 2. for each notification after the mark: validates it, loads the trace and the history, evaluates,
 *    and commits points + alarms + hold + new mark in one fenced store operation, then publishes;
 * 3. bad input is dead-lettered (`dc.dead.<reason>`) and the mark moves past it; an outage (NATS,
 *    store) pauses the chamber and retries without counting attempts; other failures are retried
 *    `maxAttempts` times, then dead-lettered;
 * 4. a FencedError (a newer owner exists) stops the worker at once.
 */
export class ChamberWorker {
  private readonly abort = new AbortController();
  private wakeUp: (() => void) | undefined;
  private pendingNotice = false;
  private loop: Promise<void> | undefined;
  private highWaterMark = 0;
  private inflightRun = false;
  private processed = 0;
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
    if (sequence <= this.highWaterMark) return;
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
        this.highWaterMark = state.highWaterMark;
      });
      if (this.highWaterMark > 0) await this.outageRetry('republish', () => this.republish(this.highWaterMark));
      while (!signal.aborted) {
        this.pendingNotice = false;
        const msg = await this.outageRetry('read', () => this.deps.source.next(this.subject, this.highWaterMark + 1));
        if (signal.aborted) break;
        if (!msg) {
          await this.idle();
          continue;
        }
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

  /** Runs `fn`, retrying with backoff while NATS or the store is unavailable. */
  private async outageRetry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      if (this.abort.signal.aborted && what !== 'commit') throw new StoppedSignal();
      try {
        return await fn();
      } catch (err) {
        if (!isOutage(err)) throw err;
        this.deps.observer?.paused?.(this.key, what, err);
        const delay = Math.min(this.opts.maxOutageBackoffMs, 100 * 2 ** Math.min(attempt, 10)) * (0.5 + Math.random() / 2);
        await this.deps.sleep(delay, this.abort.signal);
        if (this.abort.signal.aborted) throw new StoppedSignal();
      }
    }
  }

  private async process(msg: NotificationMessage): Promise<void> {
    const started = this.deps.monotonic();
    this.deps.observer?.received?.(this.key, msg.sequence);
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = await this.withTimeout(this.attempt(msg));
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

  private async withTimeout<T>(p: Promise<T>): Promise<T> {
    const timer = new AbortController();
    const timeout = this.deps.sleep(this.opts.processTimeoutMs, timer.signal).then(() => {
      if (!timer.signal.aborted) throw new AttemptTimeoutError(`run took longer than ${this.opts.processTimeoutMs} ms`);
      return undefined as never;
    });
    try {
      return await Promise.race([p, timeout]);
    } finally {
      timer.abort();
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

  private async history(strategy: unknown): Promise<RunPointSet[]> {
    const limit = Math.max(1, this.deps.evaluator.historyRuns(strategy));
    return this.outageRetry('history', () => this.deps.cache.history(this.chamber, { limit, highWaterMark: this.highWaterMark }));
  }

  private async attempt(msg: NotificationMessage): Promise<'applied' | 'already-applied'> {
    const n = this.parse(msg);
    // Refuse a declared-huge trace before reading it (it would be held in memory whole).
    const declared = n.trace.samples !== undefined ? n.trace.samples * n.svids.length : undefined;
    if (declared !== undefined && declared > this.opts.maxTracePoints) {
      throw new DeadLetterSignal('trace-too-large', `${declared} samples declared exceed the limit of ${this.opts.maxTracePoints}`, n.runId);
    }
    const t0 = this.deps.monotonic();
    const strategyRec = await this.outageRetry('strategy', () => this.deps.store.strategies.get(this.key));
    const [history, limits] = await Promise.all([
      this.history(strategyRec?.document),
      this.outageRetry('limits', () => this.deps.store.uchart.currentLimitSets(this.chamber)),
    ]);
    this.deps.observer?.stage?.('history', this.deps.monotonic() - t0);
    if (history.some((h) => h.runId === n.runId)) {
      throw new DeadLetterSignal('duplicate-run', `run ${n.runId} was already applied at an earlier sequence`, n.runId);
    }
    const meta = await this.outageRetry('metadata', () => this.deps.store.chamberMetadata.get(this.chamber));
    if (!meta) throw new DeadLetterSignal('unknown-chamber', `${this.key} has no chamber metadata`, n.runId);

    const t1 = this.deps.monotonic();
    let trace;
    try {
      trace = await this.outageRetry('trace', () => this.deps.store.traces.read({ ...this.chamber, runId: n.runId }));
    } catch (err) {
      if (err instanceof TraceNotFoundError) throw new DeadLetterSignal('missing-trace', err.message, n.runId);
      if (err instanceof CorruptRecordError) throw new DeadLetterSignal('corrupt-trace', err.message, n.runId);
      throw err;
    }
    let samples = 0;
    for (const s of trace.svids.values()) samples += s.length;
    if (samples === 0) throw new DeadLetterSignal('invalid-trace', 'the trace holds no samples', n.runId);
    if (samples > this.opts.maxTracePoints) {
      throw new DeadLetterSignal('trace-too-large', `${samples} samples exceed the limit of ${this.opts.maxTracePoints}`, n.runId);
    }
    this.deps.observer?.stage?.('trace', this.deps.monotonic() - t1);

    const t2 = this.deps.monotonic();
    let evaluation;
    try {
      evaluation = this.deps.evaluator.evaluate({
        chamber: this.chamber,
        sequence: msg.sequence,
        notification: n,
        trace,
        history,
        limits,
        strategy: strategyRec?.document,
        now: this.deps.now(),
      });
    } catch (err) {
      // Input the evaluator can never use (e.g. a malformed trace) is dead-lettered at once, not retried.
      const reason = (err as { deadLetterReason?: unknown } | null)?.deadLetterReason;
      if (typeof reason === 'string' && (DEAD_LETTER_REASONS as readonly string[]).includes(reason)) {
        throw new DeadLetterSignal(reason as DeadLetterReason, (err as Error).message, n.runId);
      }
      throw err;
    }
    this.deps.observer?.stage?.('evaluate', this.deps.monotonic() - t2);
    if (evaluation.points.length === 0 && evaluation.skipped.length > 0) {
      throw new DeadLetterSignal(
        'no-indicators',
        `no indicator produced a point: ${evaluation.skipped.slice(0, 5).map((s) => `${s.indicatorKey}: ${s.reason}`).join('; ')}`,
        n.runId,
      );
    }

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
        committedAt: this.deps.now(),
        points: evaluation.points,
        alarms: evaluation.alarms,
        ...(evaluation.hold ? { hold: evaluation.hold } : {}),
      }),
    );
    this.deps.observer?.stage?.('commit', this.deps.monotonic() - t3);
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
      await this.outageRetry('publish', () => this.publishEvents(msg.sequence, n, evaluation.alarms, evaluation.hold));
      // Input for the scheduled weight recompute; a lost observation only makes the weight less fresh.
      try {
        await this.deps.store.chamberMetadata.recordObservation(observeTrace(trace, this.deps.now()));
      } catch (err) {
        this.deps.observer?.paused?.(this.key, 'observation', err);
      }
    } else {
      // A replay: the alarms were published with the first commit (or are re-published by the outbox).
      await this.outageRetry('republish', () => this.republish(msg.sequence));
    }
    return result.outcome;
  }

  private async publishEvents(sequence: number, n: Pick<RunNotification, 'runId' | 'recipe'>, alarms: readonly AlarmInput[], hold?: HoldInput): Promise<void> {
    const { toolId, chamberId } = this.chamber;
    for (const a of alarms) {
      const payload = JSON.stringify({ ...a, toolId, chamberId, runId: n.runId, sequence, recipe: a.recipe ?? n.recipe, epoch: this.epoch, ownerId: this.opts.ownerId });
      await this.deps.sink.publish(`defense.alarms.${toolId}.${chamberId}`, payload, alarmMsgId(this.key, sequence, 'alarm', a));
      this.deps.observer?.alarm?.(this.key, a);
    }
    if (hold) {
      const payload = JSON.stringify({ ...hold, toolId, chamberId, runId: n.runId, sequence, epoch: this.epoch, ownerId: this.opts.ownerId });
      await this.deps.sink.publish(`defense.holds.${toolId}.${chamberId}`, payload, alarmMsgId(this.key, sequence, 'hold', hold));
    }
  }

  /** The outbox: re-publishes the alarms and hold of a committed run (deduplicated downstream). */
  private async republish(sequence: number): Promise<void> {
    const alarms = await this.deps.store.alarms.ofRun(this.chamber, sequence);
    const hold = await this.deps.store.alarms.hold(this.chamber);
    const runId = alarms[0]?.runId ?? hold?.runId ?? '';
    await this.publishEvents(sequence, { runId, recipe: alarms[0]?.recipe ?? '' }, alarms, hold && hold.sequence === sequence ? hold : undefined);
  }

  private async deadLetter(msg: NotificationMessage, reason: DeadLetterReason, detail: string, runId: string, attempts: number): Promise<void> {
    const dl: DeadLetter = {
      schema: 1,
      reason,
      detail,
      subject: msg.subject,
      streamSequence: msg.sequence,
      payloadBase64: Buffer.from(msg.data).toString('base64'),
      defenderId: this.opts.ownerId,
      attempts,
      deadLetteredAt: this.deps.now().toISOString(),
    };
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

class StoppedSignal extends Error {
  override readonly name = 'StoppedSignal';
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
