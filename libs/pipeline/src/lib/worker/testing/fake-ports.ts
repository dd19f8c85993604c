/**
 * Plain in-memory fakes of the ports a chamber worker uses (libs/pipeline ports.ts, the store's
 * repositories as contracts declares them), for the worker's unit specs: the store keeps state,
 * fencing, applied run ids and the outbox as the store contract says; the stream hands out
 * notifications by subject and sequence and can be recreated; the sink records every publication
 * (no deduplication, so a double shows); the clock moves only when a test advances it. Faults are
 * injected per operation with {@link FakeStore.before} / {@link FakeSink.before}.
 */
import {
  FencedError,
  notificationSubject,
  StoreUnavailableError,
  TraceNotFoundError,
  type AlarmInput,
  type ChamberMetadata,
  type ChamberRef,
  type ChamberState,
  type CommitRunInput,
  type CommitRunResult,
  type LimitSetRecord,
  type MonitorModelRecord,
  type MonitorState,
  type MonitorStateRecord,
  type ChamberMemory,
  type ChamberMemoryRecord,
  type OutboxEntry,
  type RunObservation,
  type RunPointSet,
  type StrategyRecord,
  type TraceRecord,
} from '@defender/contracts';
import type { EvaluationInput, EventSink, EventStepInput, HistoryProvider, MoreHistoryNeeded, NotificationMessage, NotificationSource, PipelineStore, RunEvaluation, RunEvaluator } from '../../ports';

export const chamber: ChamberRef = { toolId: 't1', chamberId: 'c1' };
export const subject = notificationSubject(chamber.toolId, chamber.chamberId);

/** A retryable store failure (what an outage looks like to the worker). */
export const outage = (what = 'store down'): StoreUnavailableError => new StoreUnavailableError(what);

/** A hook run before an operation: may throw (a failure) or wait (a slow call). */
export type Hook = (...args: unknown[]) => void | Promise<void>;

/** Time that moves only when the test says: `monotonic` in ms, `now` from a fixed date, sleeps end when advanced past. */
export class FakeClock {
  private t = 0;
  private readonly sleepers = new Set<{ until: number; end: () => void }>();

  readonly monotonic = (): number => this.t;
  readonly now = (): Date => new Date(Date.UTC(2026, 11, 1) + this.t);
  readonly sleep = (ms: number, signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const sleeper = {
        until: this.t + ms,
        end: () => {
          this.sleepers.delete(sleeper);
          signal.removeEventListener('abort', sleeper.end);
          resolve();
        },
      };
      this.sleepers.add(sleeper);
      signal.addEventListener('abort', sleeper.end, { once: true });
    });

  /** Sleeps not yet ended. */
  get sleeping(): number {
    return this.sleepers.size;
  }
  /** The shortest sleep pending, ms (Infinity when none). */
  get nextWake(): number {
    let min = Infinity;
    for (const s of this.sleepers) min = Math.min(min, s.until - this.t);
    return min;
  }

  /** Moves time by `ms`, ending every sleep due. */
  advance(ms: number): void {
    this.t += ms;
    for (const s of [...this.sleepers]) if (s.until <= this.t) s.end();
  }
}

/** Lets every promise chain that can move, move (no timers involved). */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Settles until `cond` holds, moving `clock` to each next sleep's end meanwhile; fails after `steps` steps. */
export async function until(cond: () => boolean, clock?: FakeClock, steps = 200): Promise<void> {
  for (let i = 0; i < steps; i++) {
    await settle();
    if (cond()) return;
    if (clock && clock.nextWake < Infinity) clock.advance(Math.max(clock.nextWake, 1));
  }
  throw new Error(`condition not reached after ${steps} steps: ${cond.toString()}`);
}

/** The notification body of run `runId` of {@link chamber}. */
export function notificationOf(runId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const start = new Date(Date.UTC(2026, 10, 25)).toISOString();
  return { schema: 1, ...chamber, runId, recipe: 'R', contextWindow: { start, end: start }, svids: ['pressure'], trace: { store: 'default' }, completedAt: start, ...extra };
}

/** A trace of run `runId` of {@link chamber}: `samples` values of one SVID at 1 Hz. */
export function traceOf(runId: string, samples = 60): TraceRecord {
  return { ...chamber, runId, timing: { kind: 'regular', startSeconds: 1_800_000_000, frequencyHz: 1 }, svids: new Map([['pressure', new Float64Array(samples).fill(50)]]), steps: [] };
}

/** The notification stream: messages by subject and sequence; `recreate` restarts it empty under a new identity. */
export class FakeSource implements NotificationSource {
  messages: NotificationMessage[] = [];
  id = 'stream-1';
  private seq = 0;
  private generation = 1;
  readonly before: { next?: Hook; streamId?: Hook } = {};

  /** Appends a message (a JSON body, or raw text) on `subj`; returns its stream sequence. */
  publish(body: Record<string, unknown> | string, subj = subject): number {
    const data = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    this.messages.push({ subject: subj, sequence: ++this.seq, data, storedAt: new Date(0) });
    return this.seq;
  }
  /** The stream deleted and created again: empty, sequences from 1, another identity. */
  recreate(): void {
    this.messages = [];
    this.seq = 0;
    this.id = `stream-${++this.generation}`;
  }
  async next(subj: string, fromSequence: number): Promise<NotificationMessage | null> {
    await this.before.next?.(subj, fromSequence);
    return this.messages.find((m) => subjectMatches(subj, m.subject) && m.sequence >= fromSequence) ?? null;
  }
  async streamId(): Promise<string> {
    await this.before.streamId?.();
    return this.id;
  }
  async lastSequence(): Promise<number> {
    return this.seq;
  }
}

/** Whether NATS subject `subject` matches `pattern` (`*` one token, `>` the rest). */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const t = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return t.length > i;
    if (i >= t.length || (p[i] !== '*' && p[i] !== t[i])) return false;
  }
  return p.length === t.length;
}

/** The event stream: every publication recorded in order (no deduplication: a double shows). */
export class FakeSink implements EventSink {
  readonly published: { subject: string; payload: string; msgId: string }[] = [];
  readonly before: { publish?: Hook } = {};
  async publish(subj: string, payload: string, msgId: string): Promise<void> {
    await this.before.publish?.(subj, payload, msgId);
    this.published.push({ subject: subj, payload, msgId });
  }
  async lastMsgId(subj: string): Promise<string | undefined> {
    return this.published.findLast((p) => p.subject === subj)?.msgId;
  }
  /** Subjects and ids published, dead letters left out unless asked. */
  events(deadLetters = false): string[] {
    return this.published.filter((p) => deadLetters || !p.subject.startsWith('dc.dead.')).map((p) => `${p.subject} ${p.msgId}`);
  }
  deadLetters(): { reason: string; detail: string; attempts: number }[] {
    return this.published.filter((p) => p.subject.startsWith('dc.dead.')).map((p) => JSON.parse(p.payload) as { reason: string; detail: string; attempts: number });
  }
}

const unused = (): Promise<never> => Promise.reject(new Error('not used by the worker'));

type StoreOp = 'claim' | 'commitRun' | 'appliedRun' | 'bindStream' | 'pending' | 'markPublished' | 'latest' | 'currentLimitSets' | 'putLimitSet' | 'metadata' | 'trace' | 'recordObservation' | 'monitorState' | 'monitorModel' | 'chamberMemory';

/**
 * One chamber's store as the store contract describes it: the owner epoch fences every write
 * (claim, commit, bindStream, markPublished), a commit writes the run, its alarms, outbox events and
 * run id with the mark at once, a run id applied at another sequence answers `duplicate-run`.
 */
export class FakeStore {
  state: ChamberState = { ...chamber, ownerEpoch: 0, ownerId: '', highWaterMark: 0, updatedAt: new Date(0) };
  readonly runs = new Map<number, RunPointSet>();
  readonly applied = new Map<string, number>();
  readonly alarms: { sequence: number; alarm: AlarmInput }[] = [];
  outbox: OutboxEntry[] = [];
  publishedThrough = 0;
  metadata: ChamberMetadata | undefined = { ...chamber, svidCount: 1, collectionFreqHz: 1, contextDurationSeconds: 60, weight: 60, lastUpdated: new Date(0), source: 'configured', observedRuns: 0 };
  readonly traces = new Map<string, TraceRecord>();
  readonly limitSets: LimitSetRecord[] = [];
  strategies: StrategyRecord[] = [];
  readonly observations: RunObservation[] = [];
  /** The monitor state per recipe, written by commits that carry one. */
  readonly monitorStates = new Map<string, MonitorStateRecord>();
  /** The monitor models by recipe and version, written by commits that carry one. */
  readonly monitorModels = new Map<string, MonitorModelRecord>();
  /** The chamber's memory, written by commits that carry one. */
  chamberMemory: ChamberMemoryRecord | undefined;
  /** Calls per operation. */
  readonly calls = new Map<StoreOp, number>();
  readonly before: Partial<Record<StoreOp, Hook>> = {};

  private async enter(op: StoreOp, ...args: unknown[]): Promise<void> {
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    await this.before[op]?.(...args);
  }
  private fence(epoch: number): void {
    if (this.state.ownerEpoch > epoch) throw new FencedError(chamber, epoch, this.state.ownerEpoch, this.state.ownerId);
  }

  /** The store as the worker sees it. */
  readonly port: PipelineStore = {
    chamberState: {
      get: async () => this.state,
      claim: async (_c, epoch, ownerId) => {
        await this.enter('claim');
        this.fence(epoch);
        this.state = { ...this.state, ownerEpoch: epoch, ownerId };
        return this.state;
      },
      commitRun: async (input) => {
        await this.enter('commitRun', input);
        return this.commit(input);
      },
      appliedRun: async (_c, runId) => {
        await this.enter('appliedRun', runId);
        return this.applied.get(runId);
      },
      bindStream: async (input) => {
        await this.enter('bindStream', input);
        this.fence(input.epoch);
        if (this.state.streamId !== input.expectedStreamId) return this.state;
        this.state = { ...this.state, ownerEpoch: input.epoch, streamId: input.streamId, ...(input.rebase ? { streamOffset: this.state.highWaterMark } : {}) };
        return this.state;
      },
    },
    outbox: {
      pending: async (_c, { limit }) => {
        await this.enter('pending');
        return this.outbox.filter((e) => e.sequence > this.publishedThrough).slice(0, limit);
      },
      publishedThrough: async () => this.publishedThrough,
      markPublished: async (_c, epoch, through) => {
        await this.enter('markPublished', through);
        this.fence(epoch);
        this.publishedThrough = Math.max(this.publishedThrough, through);
        this.outbox = this.outbox.filter((e) => e.sequence > this.publishedThrough);
      },
    },
    uchart: {
      history: unused,
      run: unused,
      putLimitSet: async (ls) => {
        await this.enter('putLimitSet', ls);
        this.limitSets.push(ls);
        return 'created' as const;
      },
      limitSet: unused,
      currentLimitSets: async () => {
        await this.enter('currentLimitSets');
        return [...this.limitSets];
      },
      limitSetHistory: unused,
    },
    traces: {
      write: unused,
      read: async (run) => {
        await this.enter('trace', run.runId);
        const t = this.traces.get(run.runId);
        if (!t) throw new TraceNotFoundError(chamber, run.runId);
        return t;
      },
      delete: unused,
    },
    strategies: {
      put: unused,
      get: unused,
      versions: unused,
      latest: async (scopes) => {
        await this.enter('latest', scopes);
        return scopes.flatMap((s) => this.strategies.filter((r) => r.scope === s).slice(-1));
      },
    },
    chamberMetadata: {
      upsert: unused,
      get: async () => {
        await this.enter('metadata');
        return this.metadata;
      },
      list: unused,
      recordObservation: async (o) => {
        await this.enter('recordObservation', o);
        this.observations.push(o);
      },
      recomputeWeights: unused,
    },
    alarms: { list: unused, ofRun: unused, hold: unused, releaseHold: unused },
    monitorState: {
      get: async (_c, recipe) => {
        await this.enter('monitorState', recipe);
        return this.monitorStates.get(recipe);
      },
      list: async () => {
        await this.enter('monitorState');
        return [...this.monitorStates.values()].sort((a, b) => (a.recipe < b.recipe ? -1 : 1));
      },
    },
    monitorModels: {
      get: async (_c, recipe, version) => {
        await this.enter('monitorModel', recipe, version);
        const versions = [...this.monitorModels.values()].filter((m) => m.recipe === recipe && (version === undefined || m.version === version));
        return versions.sort((a, b) => b.version - a.version)[0];
      },
      versions: unused,
    },
    chamberMemory: {
      get: async () => {
        await this.enter('chamberMemory');
        return this.chamberMemory;
      },
    },
  };

  private commit(input: CommitRunInput): CommitRunResult {
    this.fence(input.epoch);
    const appliedAt = this.applied.get(input.runId);
    if (appliedAt !== undefined && appliedAt !== input.sequence) {
      this.state = { ...this.state, ownerEpoch: input.epoch, highWaterMark: Math.max(this.state.highWaterMark, input.sequence) };
      return { outcome: 'duplicate-run', state: this.state, appliedSequence: appliedAt };
    }
    if (input.sequence <= this.state.highWaterMark) {
      if (this.runs.get(input.sequence)?.runId === input.runId) return { outcome: 'already-applied', state: this.state };
      throw new Error(`sequence conflict at ${input.sequence}`);
    }
    this.runs.set(input.sequence, { ...chamber, sequence: input.sequence, runId: input.runId, epoch: input.epoch, committedAt: input.committedAt, ...(input.recipe ? { recipe: input.recipe } : {}), points: input.points });
    this.applied.set(input.runId, input.sequence);
    for (const alarm of input.alarms ?? []) this.alarms.push({ sequence: input.sequence, alarm });
    for (const [index, e] of (input.events ?? []).entries()) this.outbox.push({ ...e, ...chamber, sequence: input.sequence, index });
    if (input.monitorState && input.recipe) {
      this.monitorStates.set(input.recipe, { ...chamber, recipe: input.recipe, sequence: input.sequence, runId: input.runId, committedAt: input.committedAt, state: input.monitorState });
    }
    for (const { recipe, state } of input.event?.monitorStates ?? []) {
      this.monitorStates.set(recipe, { ...chamber, recipe, sequence: input.sequence, runId: input.runId, committedAt: input.committedAt, state });
    }
    if (input.monitorModel && input.recipe) {
      const { monitorModel: m } = input;
      this.monitorModels.set(`${input.recipe}|${m.version}`, { ...chamber, recipe: input.recipe, sequence: input.sequence, runId: input.runId, committedAt: input.committedAt, ...m });
    }
    if (input.chamberMemory) {
      this.chamberMemory = { ...chamber, sequence: input.sequence, runId: input.runId, committedAt: input.committedAt, memory: input.chamberMemory };
    }
    this.state = { ...this.state, ownerEpoch: input.epoch, ownerId: input.ownerId, highWaterMark: input.sequence };
    return { outcome: 'applied', state: this.state };
  }

  /** Run ids applied with points, in sequence order (dead letters and skips leave none). */
  appliedRunIds(): string[] {
    return [...this.runs.values()].filter((r) => r.points.length > 0).sort((a, b) => a.sequence - b.sequence).map((r) => r.runId);
  }
}

/** The history cache: reads the fake store's committed runs; records what the worker says it committed. */
export class FakeCache implements HistoryProvider {
  readonly recorded: RunPointSet[] = [];
  readonly reads: { limit: number; highWaterMark?: number; allPoints?: boolean }[] = [];
  constructor(private readonly store: FakeStore) {}
  async history(_c: ChamberRef, options: { readonly limit: number; readonly highWaterMark?: number; readonly allPoints?: boolean }): Promise<RunPointSet[]> {
    this.reads.push({ ...options });
    return [...this.store.runs.values()].sort((a, b) => a.sequence - b.sequence).slice(-options.limit);
  }
  record(run: RunPointSet): void {
    this.recorded.push(run);
  }
  invalidate(): void {
    this.recorded.length = 0;
  }
}

/**
 * An evaluator the test scripts: by default one point per run (the trace's first value) and an
 * alarm for every run id in `alarmOn` (a hold too for those in `holdOn`); `evaluate` may be replaced.
 */
export class FakeEvaluator implements RunEvaluator {
  readonly alarmOn = new Set<string>();
  readonly holdOn = new Set<string>();
  readonly inputs: EvaluationInput[] = [];
  steadyRuns = 10;
  /** The steady state's runs for a chamber with a memory (the escalation rules answered by it). */
  steadyRunsRemembering = 0;
  fullRuns = 30;
  judge: (input: EvaluationInput) => RunEvaluation | MoreHistoryNeeded = (input) => {
    const runId = input.notification.runId;
    const value = input.trace.svids.values().next().value?.[0] ?? 0;
    const alarms: AlarmInput[] = this.alarmOn.has(runId)
      ? [
          { ruleId: 'WE1', indicatorKey: 'k', action: 'ALARM', value, message: 'beyond 3 sigma' },
          { ruleId: 'WE2', indicatorKey: 'k', action: 'ALARM', value, message: '2 of 3 beyond 2 sigma' },
        ]
      : [];
    return { points: [{ indicatorKey: 'k', value, flags: 0 }], alarms, ...(this.holdOn.has(runId) ? { hold: { holdId: `h-${runId}`, ruleId: 'esc', reason: 'escalation' } } : {}), newLimitSets: [], skipped: [] };
  };
  historyRuns(_strategy: unknown, _scope?: unknown, memory?: ChamberMemory): number {
    return memory ? this.steadyRunsRemembering : this.steadyRuns;
  }
  fullHistoryRuns(): number {
    return this.fullRuns;
  }
  evaluate(input: EvaluationInput & { readonly historyLimit: number }): RunEvaluation | MoreHistoryNeeded;
  evaluate(input: EvaluationInput & { readonly historyLimit?: undefined }): RunEvaluation;
  evaluate(input: EvaluationInput): RunEvaluation | MoreHistoryNeeded;
  evaluate(input: EvaluationInput): RunEvaluation | MoreHistoryNeeded {
    this.inputs.push(input);
    return this.judge(input);
  }
  readonly eventInputs: EventStepInput[] = [];
  /** What an event does to a recipe's state (default: nothing). */
  eventStep: (input: EventStepInput) => MonitorState | undefined = () => undefined;
  stateAfterEvent(input: EventStepInput): MonitorState | undefined {
    this.eventInputs.push(input);
    return this.eventStep(input);
  }
}
