import { DEAD_LETTER_REASONS, eventRunId, observeTrace, type ChamberRef, type CommitRunResult, type DeadLetterReason, type EquipmentEvent, type MonitorState, type RunNotification } from '@defender/contracts';
import { runEvents } from '../outbox';
import { needsMoreHistory, type EvaluationInput, type MoreHistoryNeeded, type PipelineObserver, type RunEvaluation, type RunEvaluator } from '../ports';
import type { ByteBudget, Semaphore } from '../semaphore';
import { DeadLetterSignal, type AttemptPolicy } from './attempt-policy';
import { traceBytes, type Parsed } from './notification';
import type { OutboxPublisher } from './outbox-publisher';
import { InvalidStrategyDocumentError } from '../evaluator/errors';
import type { EventIO } from './event-io';
import type { HistoryRead, RunIO, RunReads, TraceRead } from './run-io';
import type { RunMessage } from './stream-position';

/** The chamber and owner an attempt works for, and the trace limit it enforces. */
export interface RunAttemptContext {
  readonly chamber: ChamberRef;
  readonly key: string;
  readonly epoch: number;
  readonly ownerId: string;
  /** Largest trace accepted, in samples over all SVIDs. */
  readonly maxTracePoints: number;
}

/** The units an attempt drives. */
export interface RunAttemptParts {
  readonly io: RunIO;
  /** An equipment event's reads and commit. */
  readonly events: EventIO;
  readonly outbox: OutboxPublisher;
  readonly policy: Pick<AttemptPolicy, 'outageRetry' | 'notCounted'>;
}

/** What an attempt computes with. */
export interface RunAttemptDeps {
  readonly evaluator: RunEvaluator;
  /** Bounds the whole-history evaluations at once (see `WorkerDeps.fitSlots`). */
  readonly fitSlots?: Semaphore;
  /** Bounds the bytes of traces held (see `WorkerDeps.traceBudget`). */
  readonly traceBudget?: ByteBudget;
  readonly observer?: PipelineObserver;
  readonly now: () => Date;
  readonly monotonic: () => number;
}

/**
 * One attempt at a run: refuses a declared-huge trace, issues the run's reads ({@link RunIO.readRun}),
 * skips a run id applied before, evaluates (reading the whole history in a fit slot when the run
 * asks for it), commits, and publishes the run's outbox. Bad input throws {@link DeadLetterSignal};
 * timeouts, retries and dead letters are the caller's.
 */
export class RunAttempt {
  constructor(
    private readonly ctx: RunAttemptContext,
    private readonly parts: RunAttemptParts,
    private readonly deps: RunAttemptDeps,
  ) {}

  /**
   * Tries `msg` (parsed as `parsed`) once, the chamber's mark being `highWaterMark`; `reserved` bytes
   * of its trace are reserved in the trace budget already. Resolves with the commit's outcome.
   */
  async run(msg: RunMessage, parsed: Parsed, reserved: number, highWaterMark: number): Promise<CommitRunResult['outcome']> {
    if ('e' in parsed) return this.applyEvent(msg, parsed.e, highWaterMark);
    if (!('n' in parsed)) throw parsed.error;
    const n = parsed.n;
    // Refuse a declared-huge trace before reading it (it would be held in memory whole).
    const declared = n.trace.samples !== undefined ? n.trace.samples * n.svids.length : undefined;
    if (declared !== undefined && declared > this.ctx.maxTracePoints) {
      throw new DeadLetterSignal('trace-too-large', `${declared} samples declared exceed the limit of ${this.ctx.maxTracePoints}`, n.runId);
    }
    const t0 = this.deps.monotonic();
    const reads = this.parts.io.readRun(n, highWaterMark);
    try {
      return await this.apply(msg, n, reads, reserved, t0, highWaterMark);
    } finally {
      // A trace read by an attempt that failed before evaluating it (evaluated ones are released already).
      this.parts.io.releaseUnevaluated(reads);
    }
  }

  /**
   * An equipment event at its sequence (ADR 0019): skipped when its id was applied at another sequence
   * (published again); else each recipe's monitor state stepped by the action its strategy gives the
   * event's kind (`RunEvaluator.stateAfterEvent`), and the event committed with the states it changed,
   * the chamber's memory carried past it. Nothing to publish.
   */
  private async applyEvent(msg: RunMessage, event: EquipmentEvent, highWaterMark: number): Promise<CommitRunResult['outcome']> {
    const { events, io } = this.parts;
    const appliedAt = await events.appliedAt(event);
    if (appliedAt !== undefined && appliedAt !== msg.sequence) return io.skipDuplicate(msg.sequence, eventRunId(event.eventId));
    const [states, chamberMemory] = await Promise.all([events.monitorStates(), events.chamberMemoryAt(highWaterMark)]);
    const changed: { recipe: string; state: MonitorState }[] = [];
    for (const rec of states) {
      const strategy = await events.strategyOf(rec.recipe, event);
      let state: MonitorState | undefined;
      try {
        state = this.deps.evaluator.stateAfterEvent({
          chamber: this.ctx.chamber,
          recipe: rec.recipe,
          sequence: msg.sequence,
          event,
          state: rec.state,
          strategy: strategy?.record.document,
          ...(strategy ? { strategyScope: strategy.scope } : {}),
        });
      } catch (err) {
        // A recipe whose strategy is invalid judges none of its runs (each is dead-lettered): the
        // event still applies to the others.
        if (!(err instanceof InvalidStrategyDocumentError)) throw err;
        continue;
      }
      if (state) changed.push({ recipe: rec.recipe, state });
    }
    return events.commit({ sequence: msg.sequence, event, committedAt: this.deps.now(), monitorStates: changed, chamberMemory });
  }

  /** The rest of an attempt, once its reads are issued; they are looked at in this order. */
  private async apply(msg: RunMessage, n: RunNotification, reads: RunReads, reserved: number, t0: number, highWaterMark: number): Promise<CommitRunResult['outcome']> {
    const { io, outbox, policy } = this.parts;
    // A run id the chamber applied at another sequence (its notification published again, at any
    // age) is skipped before it is evaluated (which could write limit sets); the commit decides.
    const appliedAt = await reads.applied;
    if (appliedAt !== undefined && appliedAt !== msg.sequence) return io.skipDuplicate(msg.sequence, n.runId);
    const [strategy, read, limits, monitorState, monitorModel, chamberMemory] = await Promise.all([
      reads.strategy,
      reads.history,
      reads.limits,
      reads.monitorState,
      reads.monitorModel,
      reads.chamberMemory,
    ]);
    this.deps.observer?.stage?.('history', this.deps.monotonic() - t0);
    const meta = await reads.metadata;
    if (!meta) throw new DeadLetterSignal('unknown-chamber', `${this.ctx.key} has no chamber metadata`, n.runId);

    const { evaluation, observation } = await this.evaluateTrace(
      msg,
      n,
      await reads.trace,
      {
        history: read.runs,
        historyLimit: read.limit,
        limits,
        strategy: strategy?.record.document,
        ...(strategy ? { strategyScope: strategy.scope } : {}),
        ...(monitorState ? { monitorState } : {}),
        ...(monitorModel ? { monitorModel } : {}),
        ...(chamberMemory ? { chamberMemory } : {}),
      },
      reserved,
      (runs) => io.history(strategy, highWaterMark, runs),
    );
    if (evaluation.points.length === 0 && evaluation.skipped.length > 0) {
      throw new DeadLetterSignal(
        'no-indicators',
        `no indicator produced a point: ${evaluation.skipped.slice(0, 5).map((s) => `${s.indicatorKey}: ${s.reason}`).join('; ')}`,
        n.runId,
      );
    }

    const committedAt = this.deps.now();
    const events = runEvents(this.ctx.chamber, { sequence: msg.sequence, runId: n.runId, recipe: n.recipe, epoch: this.ctx.epoch, ownerId: this.ctx.ownerId }, evaluation.alarms, evaluation.hold);
    const outcome = await io.commit({ sequence: msg.sequence, runId: n.runId, recipe: n.recipe, committedAt, evaluation, events });
    // Applied at another sequence after all (a concurrent commit the early check could not see).
    if (outcome === 'duplicate-run') return outcome;
    if (outcome === 'applied') {
      // Input for the scheduled weight recompute, written while the alarms are published.
      const recorded = io.recordObservation(observation);
      try {
        if (events.length > 0) await policy.outageRetry('publish', () => outbox.publishCommitted(events, msg.sequence));
      } finally {
        await recorded;
      }
    } else {
      // A replay of the run at its own sequence (an attempt that committed after it was abandoned):
      // whatever of the outbox is still unpublished goes out now.
      await policy.outageRetry('publish', () => outbox.publishPending(false));
    }
    return outcome;
  }

  /**
   * Evaluates the run and summarizes the trace for the weights; the trace (the big allocation of a
   * run) is referenced only inside, so it can be collected before the commit and the publications;
   * what the reservation (`reserved` bytes) does not cover is charged to the trace budget while the
   * trace is held.
   */
  private async evaluateTrace(
    msg: RunMessage,
    n: RunNotification,
    read: TraceRead,
    ctx: Pick<EvaluationInput, 'history' | 'historyLimit' | 'limits' | 'strategy' | 'strategyScope' | 'monitorState' | 'monitorModel' | 'chamberMemory'>,
    reserved: number,
    moreHistory: (runs: number) => Promise<HistoryRead>,
  ): Promise<{ evaluation: RunEvaluation; observation: ReturnType<typeof observeTrace> }> {
    const { trace } = read;
    const extra = traceBytes(trace) - reserved;
    const release = extra > 0 ? this.deps.traceBudget?.charge(extra) : undefined;
    try {
      let samples = 0;
      for (const s of trace.svids.values()) samples += s.length;
      if (samples === 0) throw new DeadLetterSignal('invalid-trace', 'the trace holds no samples', n.runId);
      if (samples > this.ctx.maxTracePoints) {
        throw new DeadLetterSignal('trace-too-large', `${samples} samples exceed the limit of ${this.ctx.maxTracePoints}`, n.runId);
      }
      this.deps.observer?.stage?.('trace', read.readMs);
      this.deps.observer?.traceSamples?.(this.ctx.key, samples);

      let evaluationMs = 0;
      const judge = (history: Pick<typeof ctx, 'history' | 'historyLimit'>): RunEvaluation | MoreHistoryNeeded => {
        const t2 = this.deps.monotonic();
        try {
          // The run's own completion time stamps what it creates (limit sets, models): an attempt retried
          // after a timeout that left some of them written creates the same records (idempotent writes),
          // where the clock would make them conflict with the ones already stored.
          return this.deps.evaluator.evaluate({ chamber: this.ctx.chamber, sequence: msg.sequence, notification: n, trace, ...ctx, ...history, now: new Date(n.completedAt) });
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
      let evaluation = judge(ctx);
      if (needsMoreHistory(evaluation)) {
        // The steady state's history was not enough for this run (Phase I completes, a chart reads
        // further back): read as much as it asks for and judge it again.
        // The whole history and a fit on it are a run's largest transient: a few at a time (fitSlots).
        // Waiting for a slot, like evaluating, is bounded work of other runs: not against the timeout.
        const waitFrom = this.deps.monotonic();
        const releaseFit = await this.deps.fitSlots?.acquire();
        this.parts.policy.notCounted(this.deps.monotonic() - waitFrom);
        try {
          const more = await moreHistory(evaluation.runs);
          evaluation = judge({ history: more.runs, historyLimit: more.limit });
        } finally {
          releaseFit?.();
        }
        // Read as far as it asked, the run cannot ask again; an evaluator that does is broken.
        if (needsMoreHistory(evaluation)) throw new Error(`the evaluator asked for more history again after ${evaluation.runs} runs: ${evaluation.reason}`);
      }
      this.parts.policy.notCounted(evaluationMs);
      this.deps.observer?.stage?.('evaluate', evaluationMs);
      return { evaluation, observation: observeTrace(trace, this.deps.now()) };
    } finally {
      this.parts.io.releaseTrace(trace);
      release?.();
    }
  }
}
