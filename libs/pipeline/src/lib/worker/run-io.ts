import {
  CorruptRecordError,
  deadLetterRecord,
  TraceNotFoundError,
  type ChamberMemory,
  type ChamberMetadata,
  type ChamberRef,
  type CommitRunResult,
  type DeadLetter,
  type DeadLetterReason,
  type LimitSetRecord,
  type MonitorModelRecord,
  type MonitorState,
  type OutboxEventInput,
  type RunNotification,
  type RunObservation,
  type RunPointSet,
  type TraceRecord,
} from '@defender/contracts';
import type { EventSink, HistoryProvider, PipelineObserver, PipelineStore, RunEvaluation, RunEvaluator } from '../ports';
import { DeadLetterSignal, type OutageRetry } from './attempt-policy';
import { strategyFor, type RunStrategy } from './strategy-lookup';
import type { RunMessage } from './stream-position';

/** Who does a {@link RunIO}'s writes: the chamber and its owner. */
export interface RunIOContext {
  readonly chamber: ChamberRef;
  readonly key: string;
  /** The owner's epoch (fencing token) every write carries. */
  readonly epoch: number;
  readonly ownerId: string;
}

/** The ports a {@link RunIO} reads and writes through. */
export interface RunIODeps {
  readonly store: PipelineStore;
  readonly cache: HistoryProvider;
  readonly sink: EventSink;
  /** How much history a strategy reads (the evaluator answers; RunIO never evaluates). */
  readonly evaluator: Pick<RunEvaluator, 'historyRuns' | 'fullHistoryRuns'>;
  /** Gives a read trace's memory back (see `WorkerDeps.releaseTrace`). */
  readonly releaseTrace?: (trace: TraceRecord) => void;
  readonly observer?: PipelineObserver;
  readonly now: () => Date;
  readonly monotonic: () => number;
}

export type { RunStrategy } from './strategy-lookup';

/** Committed runs read for an evaluation, and the limit they were read with. */
export interface HistoryRead {
  readonly runs: RunPointSet[];
  readonly limit: number;
}

/** A run's trace and how long reading it took, ms. */
export interface TraceRead {
  readonly trace: TraceRecord;
  readonly readMs: number;
}

/**
 * Every store read of one attempt at a run, issued together (see {@link RunIO.readRun}); each may
 * reject (an outage that outlived the attempt, a dead letter, FencedError never). Rejections are
 * marked handled: whoever awaits one still sees its error.
 */
export interface RunReads {
  /** The strategy that judges the run (undefined: the built-in default). */
  readonly strategy: Promise<RunStrategy | undefined>;
  /** The history the strategy needs in the steady state (none when the chamber's memory is all it needs). */
  readonly history: Promise<HistoryRead>;
  /** The chamber's current limit set per indicator. */
  readonly limits: Promise<LimitSetRecord[]>;
  readonly metadata: Promise<ChamberMetadata | undefined>;
  readonly trace: Promise<TraceRead>;
  /** The sequence the run id was applied at, if it was. */
  readonly applied: Promise<number | undefined>;
  /** The chamber monitor's state for the run's recipe (what its previous run left), if one is stored. */
  readonly monitorState: Promise<MonitorState | undefined>;
  /** The recipe's stored model: the version its state judges with, else (no state) its newest; none in Phase I. */
  readonly monitorModel: Promise<MonitorModelRecord | undefined>;
  /**
   * The chamber's memory, if the commit at the high-water mark wrote it (one that did not — a dead
   * letter, a skipped duplicate, an earlier release — leaves it behind the mark: the history counts).
   */
  readonly chamberMemory: Promise<ChamberMemory | undefined>;
}

/** A run's results as the commit stores them. */
export interface RunCommit {
  readonly sequence: number;
  readonly runId: string;
  readonly recipe?: string;
  readonly committedAt: Date;
  readonly evaluation: Pick<RunEvaluation, 'points' | 'alarms' | 'hold' | 'newLimitSets' | 'monitorState' | 'monitorModel' | 'chamberMemory'>;
  readonly events: readonly OutboxEventInput[];
}

/**
 * A chamber's run I/O as its owner: the reads of one attempt (all in {@link readRun}), the further
 * history a run may ask for, and the fenced writes (a run's commit, a skipped duplicate, a dead
 * letter). Every call goes through `retry` (outages paused and retried, by step name); FencedError
 * passes through.
 */
export class RunIO {
  constructor(
    private readonly ctx: RunIOContext,
    private readonly deps: RunIODeps,
    private readonly retry: OutageRetry,
  ) {}

  /**
   * Issues every read of an attempt at `n` at once, the chamber's mark being `highWaterMark`: they do
   * not depend on each other (but the history's length on the strategy), so with a remote store the
   * run waits for the slowest, not for their sum. The caller looks at them in its own order, so a run
   * that is bad in several ways is dead-lettered for the same reason whatever answers first.
   */
  readRun(n: RunNotification, highWaterMark: number): RunReads {
    const { chamber } = this.ctx;
    const strategy = handled(strategyFor(this.ctx, this.deps, this.retry, n.recipe, n.runId));
    const chamberMemory = handled(
      this.retry('chamber memory', async () => {
        const rec = await this.deps.store.chamberMemory.get(chamber);
        return rec !== undefined && rec.sequence === highWaterMark ? rec.memory : undefined;
      }),
    );
    const monitorState = handled(this.retry('monitor state', async () => (await this.deps.store.monitorState.get(chamber, n.recipe))?.state));
    return {
      strategy,
      chamberMemory,
      history: handled(Promise.all([strategy, chamberMemory]).then(([s, memory]) => this.history(s, highWaterMark, undefined, memory))),
      limits: handled(this.retry('limits', () => this.deps.store.uchart.currentLimitSets(chamber))),
      metadata: handled(this.retry('metadata', () => this.deps.store.chamberMetadata.get(chamber))),
      trace: handled(this.readTrace(n)),
      applied: handled(this.retry('applied', () => this.deps.store.chamberState.appliedRun(chamber, n.runId))),
      monitorState,
      monitorModel: handled(monitorState.then((state) => this.modelFor(n.recipe, state))),
    };
  }

  /**
   * The newest committed runs of the chamber, `limit` of them (default: what the strategy needs in the
   * steady state, given the chamber's `memory`; none read when that is 0). A read for the steady state
   * may lack the points only a baseline fit reads: an evaluation that may fit asks for the full history
   * (`MoreHistoryNeeded`), read with every point.
   */
  async history(strategy: RunStrategy | undefined, highWaterMark: number, limit?: number, memory?: ChamberMemory): Promise<HistoryRead> {
    const doc = strategy?.record.document;
    const runs = limit ?? this.deps.evaluator.historyRuns(doc, strategy?.scope, memory);
    if (runs === 0) return { runs: [], limit: 0 };
    const allPoints = limit !== undefined || runs >= this.deps.evaluator.fullHistoryRuns(doc, strategy?.scope);
    return { runs: await this.retry('history', () => this.deps.cache.history(this.ctx.chamber, { limit: runs, highWaterMark, allPoints })), limit: runs };
  }

  /**
   * The recipe's model the run is judged with: none in Phase I (a collecting state), the version a
   * judging state names, the newest one when the recipe has no state yet (its first run here, or a
   * chamber monitored before states were stored).
   */
  private modelFor(recipe: string, state: MonitorState | undefined): Promise<MonitorModelRecord | undefined> {
    if (state?.phase === 'collecting') return Promise.resolve(undefined);
    return this.retry('monitor model', () => this.deps.store.monitorModels.get(this.ctx.chamber, recipe, state?.modelVersion));
  }

  /** Gives a trace's memory back; a failure to do so only leaves it to the garbage collector. */
  releaseTrace(trace: TraceRecord): void {
    try {
      this.deps.releaseTrace?.(trace);
    } catch (err) {
      this.deps.observer?.releaseFailed?.(this.ctx.key, err);
    }
  }

  /** Gives back the trace of `reads` once read, if the attempt ends before evaluating it (safe twice). */
  releaseUnevaluated(reads: RunReads): void {
    if (this.deps.releaseTrace) reads.trace.then((r) => this.releaseTrace(r.trace), () => undefined);
  }

  /**
   * Stores the run's new limit sets, then commits the run (points, alarms, hold, outbox events, run
   * id and mark in one fenced operation) and records it in the history cache, unless the store
   * answers `duplicate-run` (the run id was applied at another sequence: nothing of it is written).
   * @throws FencedError when a newer owner holds the chamber.
   */
  async commit(run: RunCommit): Promise<CommitRunResult['outcome']> {
    const { chamber, epoch, ownerId } = this.ctx;
    const { evaluation } = run;
    const t0 = this.deps.monotonic();
    for (const ls of evaluation.newLimitSets) {
      await this.retry('limits', () => this.deps.store.uchart.putLimitSet(ls));
    }
    const result = await this.retry('commit', () =>
      this.deps.store.chamberState.commitRun({
        chamber,
        epoch,
        ownerId,
        sequence: run.sequence,
        runId: run.runId,
        recipe: run.recipe,
        committedAt: run.committedAt,
        points: evaluation.points,
        alarms: evaluation.alarms,
        ...(evaluation.hold ? { hold: evaluation.hold } : {}),
        events: run.events,
        ...(evaluation.monitorState ? { monitorState: evaluation.monitorState } : {}),
        ...(evaluation.monitorModel ? { monitorModel: evaluation.monitorModel } : {}),
        ...(evaluation.chamberMemory ? { chamberMemory: evaluation.chamberMemory } : {}),
      }),
    );
    this.deps.observer?.stage?.('commit', this.deps.monotonic() - t0);
    if (result.outcome !== 'duplicate-run') {
      this.deps.cache.record({ ...chamber, sequence: run.sequence, runId: run.runId, epoch, committedAt: this.deps.now(), recipe: run.recipe, points: evaluation.points });
    }
    return result.outcome;
  }

  /** Moves the mark past a run id applied before: nothing of it is written or published again. */
  async skipDuplicate(sequence: number, runId: string): Promise<CommitRunResult['outcome']> {
    const { chamber, epoch, ownerId } = this.ctx;
    const result = await this.retry('commit', () => this.deps.store.chamberState.commitRun({ chamber, epoch, ownerId, sequence, runId, committedAt: this.deps.now(), points: [] }));
    return result.outcome;
  }

  /**
   * Publishes the dead letter of `msg` (`dc.dead.<reason>`, deduplicated per chamber and sequence),
   * then moves the mark past it with an empty commit, fenced like any, so the chamber goes on.
   */
  async deadLetter(msg: RunMessage, dead: { readonly reason: DeadLetterReason; readonly detail: string; readonly runId: string; readonly attempts: number }): Promise<void> {
    const { chamber, key, epoch, ownerId } = this.ctx;
    const dl: DeadLetter = deadLetterRecord({
      reason: dead.reason,
      detail: dead.detail,
      subject: msg.subject,
      streamSequence: msg.streamSequence,
      payload: msg.data,
      defenderId: ownerId,
      attempts: dead.attempts,
      deadLetteredAt: this.deps.now().toISOString(),
    });
    await this.retry('dead-letter', () => this.deps.sink.publish(`dc.dead.${dead.reason}`, JSON.stringify(dl), `dead:${key}:${msg.sequence}`));
    const deadRunId = `dead-letter:${msg.sequence}:${dead.runId}`.slice(0, 128);
    await this.retry('commit', () => this.deps.store.chamberState.commitRun({ chamber, epoch, ownerId, sequence: msg.sequence, runId: deadRunId, committedAt: this.deps.now(), points: [] }));
    this.deps.cache.record({ ...chamber, sequence: msg.sequence, runId: deadRunId, epoch, committedAt: this.deps.now(), points: [] });
  }

  /**
   * Records what an applied run's trace showed (input of the scheduled weight recompute); never
   * rejects: a lost observation only makes the weight less fresh (reported as paused).
   */
  recordObservation(observation: RunObservation): Promise<void> {
    return this.deps.store.chamberMetadata.recordObservation(observation).catch((err: unknown) => {
      this.deps.observer?.paused?.(this.ctx.key, 'observation', err);
    });
  }

  /** Reads the run's trace; a missing or unreadable one is bad input (dead-lettered). */
  private async readTrace(n: RunNotification): Promise<TraceRead> {
    const t1 = this.deps.monotonic();
    try {
      const trace = await this.retry('trace', () => this.deps.store.traces.read({ ...this.ctx.chamber, runId: n.runId }));
      return { trace, readMs: this.deps.monotonic() - t1 };
    } catch (err) {
      if (err instanceof TraceNotFoundError) throw new DeadLetterSignal('missing-trace', err.message, n.runId);
      if (err instanceof CorruptRecordError) throw new DeadLetterSignal('corrupt-trace', err.message, n.runId);
      throw err;
    }
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
