import {
  chamberKey,
  CHAMBER_MEMORY_LIMITS,
  memoryCovers,
  RECORD_LIMITS,
  rememberRun,
  type ChamberMemory,
  type ChamberRef,
  type MonitorState,
  type RunPointSet,
  type StrategyScopeInfo,
  type TraceRecord,
  type UChartPoint,
} from '@defender/contracts';
import { escalationHistoryRuns, escalationReasons, recentAlarmsOf, StrategyValidationError, type RunRecord } from '@defender/defense-rules';
import { createTrace, IndicatorCalculator, TraceValidationError, type Trace } from '@defender/uchart';
import { needsMoreHistory, type EvaluationInput, type EventStepInput, type MoreHistoryNeeded, type RunEvaluation, type RunEvaluator } from '../ports';
import { eventActionFor, monitorStateAfterEvent } from './equipment-events';
import { holdFor, holdIdOf, runAlarm, type RunIdentity } from './alarms';
import { needsOlderRuns, type DetectorInput } from './detector';
import { EvaluatorConfigError, InvalidStrategyDocumentError, InvalidTraceError } from './errors';
import { POINT_FLAGS } from './flags';
import { MonitorDetector } from './monitor-detector';
import { rulesDetector } from './rules-detector';
import { requiredRuns, scopeIssues, steadyRuns, StrategyCache, strategyForRun, type StoredStrategy } from './strategy';

/** Options of {@link createRunEvaluator}. */
export interface RunEvaluatorOptions {
  /**
   * Runs of history requested beyond the strategy's `requiredHistoryRuns` (integer >= 0, default 20):
   * room for runs that lack an indicator (all its samples NaN, dead-lettered runs) inside the
   * rule, escalation and Phase I windows, and for Phase I to keep collecting when a baseline is refused.
   */
  readonly extraHistoryRuns?: number;
  /**
   * Runs read beyond the steady state's need (defense-rules `steadyHistoryRuns`; integer >= 0,
   * default 5): room for dead-lettered runs and other recipes' runs among the runs read first. A run
   * that finds too few of its own among them asks for the full history (`MoreHistoryNeeded`), so
   * this trades the cache's runs per chamber against how often a run reads from the store.
   */
  readonly steadyExtraHistoryRuns?: number;
  /**
   * Fewest runs of history requested (integer >= 1, default 100, the history cache's default runs per
   * chamber). Charts are per recipe but history is the chamber's last runs: a chamber running k
   * recipes in turn has about 1/k of its history per recipe, and a recipe's Phase I needs
   * `baseline.minRuns` of its own points inside the window. 100 runs let up to 4-5 recipes collect
   * the default 20-run baseline; raise it for chambers with more.
   */
  readonly minHistoryRuns?: number;
  /** Reused across runs (it holds the percentile scratch buffer); default: a new one. */
  readonly calculator?: IndicatorCalculator;
  /** Distinct strategy documents whose validation is remembered (default 256). */
  readonly strategyCacheSize?: number;
}

export { storeIndicatorKey, storeKeyPrefix } from './store-keys';

const DEFAULT_EXTRA_HISTORY_RUNS = 20;
const DEFAULT_MIN_HISTORY_RUNS = 100;
const DEFAULT_STEADY_EXTRA_HISTORY_RUNS = 5;

function toTrace(rec: TraceRecord, chamber: ChamberRef, runId: string): Trace {
  if (rec.runId !== runId || rec.toolId !== chamber.toolId || rec.chamberId !== chamber.chamberId) {
    throw new InvalidTraceError(runId, `the trace read is of ${rec.toolId}:${rec.chamberId} run ${rec.runId}`);
  }
  try {
    return createTrace({ runId: rec.runId, timing: rec.timing, svids: rec.svids, steps: rec.steps });
  } catch (err) {
    if (err instanceof TraceValidationError) throw new InvalidTraceError(runId, err.message, { cause: err });
    throw err;
  }
}

class DefenseRunEvaluator implements RunEvaluator {
  private readonly calculator: IndicatorCalculator;
  private readonly strategies: StrategyCache;
  private readonly monitor = new MonitorDetector();
  private readonly extraHistoryRuns: number;
  private readonly steadyExtraHistoryRuns: number;
  private readonly minHistoryRuns: number;

  constructor(options: RunEvaluatorOptions) {
    const extra = options.extraHistoryRuns ?? DEFAULT_EXTRA_HISTORY_RUNS;
    if (!(Number.isSafeInteger(extra) && extra >= 0)) {
      throw new EvaluatorConfigError(`extraHistoryRuns must be an integer >= 0, got ${extra}`);
    }
    const steadyExtra = options.steadyExtraHistoryRuns ?? DEFAULT_STEADY_EXTRA_HISTORY_RUNS;
    if (!(Number.isSafeInteger(steadyExtra) && steadyExtra >= 0)) {
      throw new EvaluatorConfigError(`steadyExtraHistoryRuns must be an integer >= 0, got ${steadyExtra}`);
    }
    const min = options.minHistoryRuns ?? DEFAULT_MIN_HISTORY_RUNS;
    if (!(Number.isSafeInteger(min) && min >= 1)) {
      throw new EvaluatorConfigError(`minHistoryRuns must be an integer >= 1, got ${min}`);
    }
    const cacheSize = options.strategyCacheSize ?? 256;
    if (!(Number.isSafeInteger(cacheSize) && cacheSize >= 1)) {
      throw new EvaluatorConfigError(`strategyCacheSize must be an integer >= 1, got ${cacheSize}`);
    }
    this.extraHistoryRuns = extra;
    this.steadyExtraHistoryRuns = steadyExtra;
    this.minHistoryRuns = min;
    this.calculator = options.calculator ?? new IndicatorCalculator();
    this.strategies = new StrategyCache(cacheSize);
  }

  historyRuns(strategyDoc: unknown, strategyScope?: StrategyScopeInfo, memory?: ChamberMemory): number {
    const stored = this.strategies.get(strategyDoc);
    const keyed = strategyScope !== undefined;
    const steady = steadyRuns(stored, keyed, memory);
    // A chamber whose memory answers its escalation rules, judged without run-rule charts, reads no history.
    return steady === 0 ? 0 : Math.min(steady + this.steadyExtraHistoryRuns, this.fullRuns(stored, keyed));
  }

  fullHistoryRuns(strategyDoc: unknown, strategyScope?: StrategyScopeInfo): number {
    return this.fullRuns(this.strategies.get(strategyDoc), strategyScope !== undefined);
  }

  private fullRuns(stored: StoredStrategy, keyed: boolean): number {
    return Math.max(this.minHistoryRuns, requiredRuns(stored, keyed) + this.extraHistoryRuns);
  }

  stateAfterEvent(input: EventStepInput): MonitorState | undefined {
    const stored = this.strategies.get(input.strategy);
    if (stored.kind === 'invalid') throw new InvalidStrategyDocumentError(stored.issues, { cause: new StrategyValidationError(stored.issues) });
    const conflicts = scopeIssues(stored, input.strategyScope);
    if (conflicts.length > 0) throw new InvalidStrategyDocumentError(conflicts, { cause: new StrategyValidationError(conflicts) });
    const strategy = strategyForRun(stored, { chamber: chamberKey(input.chamber), recipe: input.recipe });
    if (!strategy.monitor) return undefined;
    return monitorStateAfterEvent(input.state, eventActionFor(strategy.monitor, input.event, input.recipe), input.sequence);
  }

  evaluate(input: EvaluationInput & { readonly historyLimit: number }): RunEvaluation | MoreHistoryNeeded;
  evaluate(input: EvaluationInput & { readonly historyLimit?: undefined }): RunEvaluation;
  evaluate(input: EvaluationInput): RunEvaluation | MoreHistoryNeeded;
  evaluate(input: EvaluationInput): RunEvaluation | MoreHistoryNeeded {
    const { chamber, notification } = input;
    const runId = notification.runId;
    const recipe = notification.recipe;
    const run: RunIdentity = { chamber, sequence: input.sequence, runId, recipe };

    const stored = this.strategies.get(input.strategy);
    // Never fail open: a chamber whose strategy is invalid is not judged by another one.
    if (stored.kind === 'invalid') throw new InvalidStrategyDocumentError(stored.issues, { cause: new StrategyValidationError(stored.issues) });
    // Nor by a document whose own scope disagrees with the key it was found under (another chamber,
    // another recipe): judging by it, or by the default instead, would both hide the mistake.
    const conflicts = scopeIssues(stored, input.strategyScope);
    if (conflicts.length > 0) throw new InvalidStrategyDocumentError(conflicts, { cause: new StrategyValidationError(conflicts) });
    const strategy = strategyForRun(stored, { chamber: chamberKey(chamber), recipe });
    const trace = toTrace(input.trace, chamber, runId);

    // A history read with a limit that it reaches may lack runs this one needs: a detector asks for all of them.
    const full = this.fullRuns(stored, input.strategyScope !== undefined);
    const historyLean = input.historyLimit !== undefined && input.historyLimit < full;
    const historyLimited = historyLean && input.history.length >= (input.historyLimit as number);
    // The escalation rules count the chamber's remembered alarms when its memory covers them, else the history's.
    const memory = input.chamberMemory;
    const escalationRuns = escalationHistoryRuns(strategy);
    const recentAlarms = memory && memoryCovers(memory, escalationRuns) ? memory.recentAlarms : undefined;
    const detectorInput: DetectorInput = {
      run,
      strategy,
      trace,
      calculator: this.calculator,
      history: input.history,
      limits: input.limits,
      monitorState: input.monitorState,
      monitorModel: input.monitorModel,
      recentAlarms,
      now: input.now,
      historyLimited,
      historyLean,
    };
    // The strategy's detectors, each a pure step; this evaluator combines their verdicts. A detector
    // that may need older runs than the ones read judges nothing: the caller reads more.
    const rules = rulesDetector.step(detectorInput);
    if (needsOlderRuns(rules)) return { kind: 'more-history', runs: full, reason: rules.reason };
    const monitor = strategy.monitor ? this.monitor.step(detectorInput) : undefined;
    if (monitor && needsOlderRuns(monitor)) return { kind: 'more-history', runs: full, reason: monitor.reason };

    let hold = holdFor(rules.evaluation.actions, rules.evaluation.violations, run);
    if (!hold && monitor?.alarmed) {
      // The legacy rules did not alarm (else their escalation already counted this run).
      const reasons = [...(monitor.action === 'HOLD_CHAMBER' ? ['monitor violation with action HOLD_CHAMBER'] : []), ...escalationReasons(recentAlarmsOf(rules.history, strategy), strategy.escalation)];
      if (reasons.length > 0) {
        hold = {
          holdId: holdIdOf(chamber, input.sequence),
          ruleId: monitor.action === 'HOLD_CHAMBER' ? 'indicator-action' : 'escalation',
          reason: `${reasons.join('; ')} (run ${runId}, sequence ${input.sequence}, recipe ${recipe})`.slice(0, RECORD_LIMITS.message),
        };
      }
    }
    const alarmed = rules.alarmed || (monitor?.alarmed ?? false);
    const runFlags = (alarmed ? POINT_FLAGS.RUN_ALARMED : 0) | (hold ? POINT_FLAGS.RUN_HOLD : 0);
    const points: UChartPoint[] = [];
    for (const verdict of monitor ? [rules, monitor] : [rules]) for (const p of verdict.points) points.push({ ...p, flags: (p.flags | runFlags) >>> 0 });
    // One alarm per run, listing every violation of the rules and of the monitor.
    const alarm = runAlarm(
      rules.evaluation.violations,
      monitor?.violations ?? [],
      run,
      monitor ? { modelKey: monitor.modelKey, action: monitor.action, t2: monitor.t2, spe: monitor.spe, modelVersion: monitor.modelVersion } : undefined,
    );
    // A run with points is a judged run of the chamber: its memory remembers whether it alarmed. Without
    // a stored memory (a chamber judged before it was kept, or after a commit that did not carry it) it
    // starts from the alarm flags of the history read.
    const complete = input.historyLimit === undefined || input.history.length < input.historyLimit;
    const before = memory ?? memoryOfHistory(rules.history.runs, escalationRuns, complete);
    return {
      points,
      alarms: alarm ? [alarm] : [],
      ...(hold ? { hold } : {}),
      newLimitSets: [...rules.newLimitSets, ...(monitor?.newLimitSets ?? [])],
      skipped: [...rules.skipped, ...(monitor?.skipped ?? [])],
      ...(monitor?.state ? { monitorState: monitor.state } : {}),
      ...(monitor?.state && monitor.modelRecord ? { monitorModel: monitor.modelRecord } : {}),
      ...(points.length > 0 ? { chamberMemory: rememberRun(before, alarmed) } : {}),
    };
  }
}

/**
 * A chamber's memory as the history read shows it: the alarm flags of its newest `window` judged runs
 * (what the escalation rules read of it: no run further back is decoded), from its first run when
 * those are all the runs of a read that holds every committed run (`complete`).
 */
function memoryOfHistory(runs: readonly RunRecord[], window: number, complete: boolean): ChamberMemory {
  const kept = window === 0 ? [] : runs.slice(-Math.min(window, CHAMBER_MEMORY_LIMITS.recentAlarms));
  return { recentAlarms: kept.map((r) => r.alarmed), fromFirstRun: complete && kept.length === runs.length };
}

/**
 * The production {@link RunEvaluator}: U-chart engine (`@defender/uchart`) + defense rules
 * (`@defender/defense-rules`) over the store's records. Pure and deterministic: no clock (the
 * baseline timestamp is `input.now`), no timers, no logging, no I/O; holds only an
 * `IndicatorCalculator` scratch buffer and a cache of validated strategy documents, so one instance
 * serves every chamber of a worker (`evaluate` is synchronous).
 *
 * `evaluate(input)`:
 * 1. strategy: the stored document validated with the defense-rules schema and resolved for the
 *    chamber and recipe; missing -> `DEFAULT_STRATEGY` (the chamber monitor); an invalid document,
 *    or one whose own scope disagrees with the scope key it was found under
 *    (`input.strategyScope`), is never replaced: {@link InvalidStrategyDocumentError}, which a
 *    worker dead-letters with reason `invalid-strategy`; without `strategyScope` (a bare document) one
 *    out of its own scope gives `DEFAULT_STRATEGY`;
 * 2. trace: the `TraceRecord` as a uchart trace (validated; NaN / ±Infinity samples count as missing);
 *    readings per indicator, keyed `<recipe>|<key>` ({@link storeIndicatorKey});
 * 3. history: committed runs decoded oldest first (dead-lettered runs, with no points, left out) and
 *    the current limit sets as frozen limits;
 * 4. Phase I: an indicator without limits whose Phase I points reach `baseline.minRuns` gets limits
 *    (returned in `newLimitSets`, version 1, `createdAt = input.now`) that judge this run already;
 *    a refused baseline (too few runs left after exclusion, no variation) keeps collecting;
 * 5. rules: defense-rules `evaluate`; the result as points (flags: {@link POINT_FLAGS}, chart state:
 *    `CHART_KEYS`), one alarm per violation, a hold when HOLD_CHAMBER is returned, and `skipped`.
 *
 * @throws {@link InvalidTraceError} when the trace fails validation or belongs to another run.
 * @throws {@link InvalidStrategyDocumentError} for an invalid stored strategy, or one whose scope disagrees
 *   with its key (the run is dead-lettered, not judged).
 * @throws {@link EvaluatorConfigError} (from this factory) for options out of their domain.
 */
export function createRunEvaluator(options: RunEvaluatorOptions = {}): RunEvaluator {
  return new DefenseRunEvaluator(options);
}

/**
 * Evaluates a run as a worker does: with the newest `historyRuns` committed runs (`read(limit)`, oldest
 * first) and, when the run needs older ones ({@link MoreHistoryNeeded}), again with as many as it
 * asks for. For callers that hold a chamber's history themselves (tests, benchmarks). `read` may leave
 * out what only a baseline fit reads ({@link withoutBaselineData}) unless `allPoints`.
 */
export function evaluateWithHistory(
  evaluator: RunEvaluator,
  input: Omit<EvaluationInput, 'history' | 'historyLimit'>,
  read: (limit: number, allPoints: boolean) => readonly RunPointSet[],
): RunEvaluation {
  const limit = evaluator.historyRuns(input.strategy, input.strategyScope, input.chamberMemory);
  // As a worker reads: the steady state's runs may lack what only a baseline fit reads, unless they are the full history.
  const allPoints = limit >= evaluator.fullHistoryRuns(input.strategy, input.strategyScope);
  const first = evaluator.evaluate({ ...input, history: limit === 0 ? [] : read(limit, allPoints), historyLimit: limit });
  if (!needsMoreHistory(first)) return first;
  // Read with the limit the evaluator asked for, the run is judged: it asks no further.
  const second = evaluator.evaluate({ ...input, history: read(first.runs, true), historyLimit: first.runs });
  if (needsMoreHistory(second)) throw new Error(`the evaluator asked for more history again after ${first.runs} runs: ${second.reason}`);
  return second;
}
