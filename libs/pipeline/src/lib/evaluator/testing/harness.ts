/**
 * Test support for the run evaluator (not exported from the library): traces and notifications from
 * plain numbers, and a simulated chamber that feeds runs through the evaluator the way
 * `ChamberWorker` does, with every stored record serialised to JSON and parsed back (the store's
 * encode -> decode) before the next run reads it.
 */
import {
  CHAMBER_MEMORY_SCHEMA_VERSION,
  decodeChamberMemory,
  encodeChamberMemory,
  decodeMonitorModelBody,
  encodeMonitorModelBody,
  encodeMonitorState,
  eventRunId,
  MONITOR_MODEL_SCHEMA_VERSION,
  validateCommitRunInput,
  validateLimitSet,
  type ChamberMemory,
  type ChamberRef,
  type EquipmentEvent,
  type LimitSetRecord,
  type MonitorModelInput,
  type MonitorModelRecord,
  type MonitorState,
  type RunNotification,
  type RunPointSet,
  type StrategyScopeInfo,
  type TraceRecord,
  type TraceStep,
} from '@defender/contracts';
import type { EvaluationInput, RunEvaluation, RunEvaluator } from '../../ports';
import { MONITOR_MODEL_KEY, type MonitorModel } from '@defender/defense-rules';
import { withoutBaselineData } from '../flags';
import { legacyModelLimitSets } from '../monitor-model-store';
import { storeKeyPrefix } from '../store-keys';
import { evaluateWithHistory } from '../run-evaluator';

export const CHAMBER: ChamberRef = { toolId: 'ETCH01', chamberId: 'PM2' };
export const T0 = Date.UTC(2024, 4, 1);

/** A regular-timing trace (1 Hz unless given) of one run; arrays are copied into Float64Arrays. */
export function traceOf(
  runId: string,
  svids: Readonly<Record<string, ArrayLike<number>>>,
  options: { readonly frequencyHz?: number; readonly steps?: readonly TraceStep[]; readonly chamber?: ChamberRef } = {},
): TraceRecord {
  const map = new Map<string, Float64Array>();
  for (const [name, values] of Object.entries(svids)) map.set(name, Float64Array.from(values));
  return {
    ...(options.chamber ?? CHAMBER),
    runId,
    timing: { kind: 'regular', startSeconds: 0, frequencyHz: options.frequencyHz ?? 1 },
    svids: map,
    steps: options.steps ?? [],
  };
}

/** A valid completion notification for a trace. */
export function notificationOf(trace: TraceRecord, recipe: string): RunNotification {
  const at = new Date(T0).toISOString();
  return {
    schema: 1,
    toolId: trace.toolId,
    chamberId: trace.chamberId,
    runId: trace.runId,
    recipe,
    contextWindow: { start: at, end: at },
    svids: [...trace.svids.keys()],
    trace: { store: 'default' },
    completedAt: at,
  };
}

function reviveDates<T>(json: string, field: string): T {
  const value = JSON.parse(json) as Record<string, unknown>;
  value[field] = new Date(value[field] as string);
  return deepFreeze(value) as T;
}

/** Frozen all the way down, so an evaluator that mutated its input would throw. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** What happened to one run in {@link SimulatedChamber.process}. */
export interface ProcessedRun {
  readonly sequence: number;
  readonly evaluation: RunEvaluation;
  /** The worker would dead-letter the run: no point, something skipped (its set is committed empty). */
  readonly deadLettered: boolean;
  /** The history and limits the evaluator was given (after the store round trip). */
  readonly input: EvaluationInput;
}

/**
 * One chamber's store as the worker sees it: committed point sets (as JSON), the newest limit set
 * per indicator (as JSON), and a sequence counter. `process` loads `historyRuns` newest sets and the
 * current limits, evaluates, and commits like `ChamberWorker.attempt` (limit sets first, then the
 * points; a run with no point and something skipped is dead-lettered: an empty set).
 */
export class SimulatedChamber {
  /** Committed point sets, each serialised once and parsed back (frozen), as a store would return it. */
  private readonly sets: RunPointSet[] = [];
  private readonly limitSets = new Map<string, LimitSetRecord>();
  /** The monitor state per recipe, as the store's `monitorState` would return it (JSON round trip). */
  private readonly states = new Map<string, MonitorState>();
  /** The monitor models by recipe, oldest version first, as the store's `monitorModels` would return them (JSON round trip). */
  private readonly models = new Map<string, MonitorModelRecord[]>();
  /**
   * The chamber's memory as a worker reads it: the one the commit at the mark wrote (JSON round trip),
   * none after a commit that carried none (a dead letter).
   */
  private memory: ChamberMemory | undefined;
  /** Whether runs carry the chamber's memory (else, as before it was kept: the history counts). */
  rememberAlarms = true;
  private sequence = 0;
  /** Runs that asked for more history than the steady state's (MoreHistoryNeeded) and were judged again. */
  longReads = 0;
  /** Points a first (steady-state) read left out, as the defender's history cache does. */
  leftOut = 0;
  /** Committed runs read, over every run processed (a run that reads no history adds none). */
  runsRead = 0;

  constructor(
    private readonly evaluator: RunEvaluator,
    readonly chamber: ChamberRef = CHAMBER,
  ) {}

  get committed(): RunPointSet[] {
    return [...this.sets];
  }

  get limits(): LimitSetRecord[] {
    return [...this.limitSets.values()];
  }

  /** The stored monitor state of a recipe. */
  monitorState(recipe: string): MonitorState | undefined {
    return this.states.get(recipe);
  }

  /** Forgets the stored monitor states, as a store written before they existed would have none. */
  forgetMonitorStates(): void {
    this.states.clear();
  }

  /** The stored model versions of each recipe (`MonitorModelRepository.versions`), by recipe then version. */
  modelVersions(): MonitorModelRecord[] {
    return [...this.models.keys()].sort().flatMap((recipe) => this.models.get(recipe) as MonitorModelRecord[]);
  }

  /** The stored model of `recipe` (its newest version, or `version`). */
  model(recipe: string, version?: number): MonitorModelRecord | undefined {
    const all = this.models.get(recipe) ?? [];
    return version === undefined ? all[all.length - 1] : all.find((m) => m.version === version);
  }

  /**
   * Stores each recipe's models as an earlier release did: limit sets under its model key
   * (legacyModelLimitSets), no model records.
   */
  modelsAsLimitSets(): void {
    for (const m of this.modelVersions()) {
      const key = `${storeKeyPrefix(m.recipe)}${MONITOR_MODEL_KEY}`;
      const model = m.model as unknown as MonitorModel;
      const reason = m.reason === 'converted' ? 'initial' : m.reason;
      for (const ls of legacyModelLimitSets(this.chamber, key, model, m.createdAt, reason, m.excludedRunIds)) this.putLimitSet(ls);
    }
    this.models.clear();
  }

  /** Stores a limit set as if someone (an operator, another tool) had written it. */
  putLimitSet(rec: LimitSetRecord): void {
    this.limitSets.set(rec.indicatorKey, reviveDates<LimitSetRecord>(JSON.stringify(rec), 'createdAt'));
  }

  /** `strategyScope`: the scope key the document was found under, as a worker passes it. */
  process(trace: TraceRecord, recipe: string, strategy?: unknown, strategyScope?: StrategyScopeInfo): ProcessedRun {
    const sequence = ++this.sequence;
    const now = new Date(T0 + sequence * 60_000);
    const base = {
      chamber: this.chamber,
      sequence,
      notification: notificationOf(trace, recipe),
      trace,
      limits: this.limits,
      strategy: strategy === undefined ? undefined : JSON.parse(JSON.stringify(strategy)),
      ...(strategyScope ? { strategyScope } : {}),
      ...(this.states.has(recipe) ? { monitorState: this.states.get(recipe) as MonitorState } : {}),
      ...(this.modelFor(recipe) ? { monitorModel: this.modelFor(recipe) as MonitorModelRecord } : {}),
      ...(this.memory && this.rememberAlarms ? { chamberMemory: this.memory } : {}),
      now,
    };
    // As a worker does: the steady state's history first, more when the run asks for it. The first read,
    // when shorter than the full history, lacks what the defender's history cache leaves out (the
    // points only a baseline fit reads); the full history comes with every point.
    const steadyLimit = this.evaluator.historyRuns(base.strategy, strategyScope, base.chamberMemory);
    let read: Pick<EvaluationInput, 'history' | 'historyLimit'> = { history: [], historyLimit: steadyLimit };
    let long = false;
    const evaluation = evaluateWithHistory(this.evaluator, base, (limit, allPoints) => {
      if (limit > steadyLimit) long = true;
      const newest = this.sets.slice(-limit);
      this.runsRead += newest.length;
      const lean = allPoints ? newest : newest.map(withoutBaselineData);
      for (let i = 0; i < lean.length; i++) this.leftOut += (newest[i] as RunPointSet).points.length - (lean[i] as RunPointSet).points.length;
      read = { history: lean, historyLimit: limit };
      return read.history;
    });
    if (long) this.longReads++;
    const input: EvaluationInput = { ...base, ...read };
    const deadLettered = evaluation.points.length === 0 && evaluation.skipped.length > 0;
    const set: RunPointSet = {
      ...this.chamber,
      sequence,
      runId: deadLettered ? `dead-letter:${sequence}:${trace.runId}` : trace.runId,
      epoch: 1,
      committedAt: now,
      recipe,
      points: deadLettered ? [] : evaluation.points,
    };
    // What the store would refuse must fail here, not in production.
    validateCommitRunInput({
      chamber: this.chamber,
      epoch: 1,
      ownerId: 'defender-0',
      sequence,
      runId: set.runId,
      recipe,
      committedAt: now,
      points: set.points,
      ...(deadLettered ? {} : { alarms: evaluation.alarms }),
      ...(evaluation.hold && !deadLettered ? { hold: evaluation.hold } : {}),
      ...(evaluation.monitorState && !deadLettered ? { monitorState: evaluation.monitorState } : {}),
      ...(evaluation.monitorModel && !deadLettered ? { monitorModel: evaluation.monitorModel } : {}),
      ...(evaluation.chamberMemory && !deadLettered ? { chamberMemory: evaluation.chamberMemory } : {}),
    });
    for (const ls of evaluation.newLimitSets) validateLimitSet(ls);
    if (!deadLettered) for (const ls of evaluation.newLimitSets) this.putLimitSet(ls);
    this.sets.push(reviveDates<RunPointSet>(JSON.stringify(set), 'committedAt'));
    if (evaluation.monitorModel && !deadLettered) this.storeModel(recipe, sequence, set.runId, now, evaluation.monitorModel);
    if (evaluation.monitorState && !deadLettered) this.states.set(recipe, deepFreeze(JSON.parse(encodeMonitorState(evaluation.monitorState)) as MonitorState));
    this.memory =
      evaluation.chamberMemory && !deadLettered
        ? deepFreeze(decodeChamberMemory(CHAMBER_MEMORY_SCHEMA_VERSION, encodeChamberMemory(evaluation.chamberMemory), { chamber: this.chamber, table: 'chamber_memory' }))
        : undefined;
    return { sequence, evaluation, deadLettered, input };
  }

  /**
   * An equipment event at the next sequence, as a worker commits it (RunAttempt): each recipe's state
   * stepped by `RunEvaluator.stateAfterEvent` under `strategy`, an empty run in the history.
   */
  event(event: EquipmentEvent, strategy?: unknown): number {
    const sequence = ++this.sequence;
    const now = new Date(T0 + sequence * 60_000);
    for (const [recipe, state] of [...this.states]) {
      const next = this.evaluator.stateAfterEvent({ chamber: this.chamber, recipe, sequence, event, state, strategy: strategy === undefined ? undefined : JSON.parse(JSON.stringify(strategy)) });
      if (next) this.states.set(recipe, deepFreeze(JSON.parse(encodeMonitorState(next)) as MonitorState));
    }
    const set: RunPointSet = { ...this.chamber, sequence, runId: eventRunId(event.eventId), epoch: 1, committedAt: now, points: [] };
    this.sets.push(reviveDates<RunPointSet>(JSON.stringify(set), 'committedAt'));
    // The chamber's memory rides past the event unchanged (the worker carries it to the event's sequence).
    return sequence;
  }

  /** The model a worker reads for a run of `recipe` (RunIO): none in Phase I, the state's version, else the newest. */
  private modelFor(recipe: string): MonitorModelRecord | undefined {
    const state = this.states.get(recipe);
    if (state?.phase === 'collecting') return undefined;
    return this.model(recipe, state?.modelVersion);
  }

  private storeModel(recipe: string, sequence: number, runId: string, committedAt: Date, input: MonitorModelInput): void {
    const ctx = { chamber: this.chamber, table: 'monitor_model' };
    const body = decodeMonitorModelBody(MONITOR_MODEL_SCHEMA_VERSION, input.version, encodeMonitorModelBody(input), ctx);
    const record = deepFreeze({ ...this.chamber, recipe, sequence, runId, committedAt, ...body });
    const all = (this.models.get(recipe) ?? []).filter((m) => m.version !== input.version);
    this.models.set(recipe, [...all, record].sort((a, b) => a.version - b.version));
  }
}

