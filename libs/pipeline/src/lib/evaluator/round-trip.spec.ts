/**
 * The store round trip is lossless for everything `evaluate` needs: feeding runs one by one through
 * the evaluator, with every point set and limit set encoded to store records, serialised to JSON and
 * decoded again before the next run, gives the same points, violations, actions and baselines as
 * feeding defense-rules its own in-memory `RunRecord`s and `FrozenLimits`.
 */
import type { TraceRecord } from '@defender/contracts';
import {
  evaluate,
  maybeEstablishBaseline,
  parseStrategy,
  readingsFromTrace,
  validateStrategy,
  type ChamberHistory,
  type DefenseStrategy,
  type Evaluation,
  type RunRecord,
  type Violation,
} from '@defender/defense-rules';
import {
  createTrace,
  DegenerateBaselineError,
  IndicatorCalculator,
  InsufficientBaselineError,
  type FrozenLimits,
} from '@defender/uchart';
import fc from 'fast-check';
import type { AlarmInput } from '@defender/contracts';
import { normalDeviate, seededRandom } from '@defender/hashing';
import { decodeLimits, decodePoint } from './codec';
import { POINT_FLAGS } from './flags';
import { createRunEvaluator, storeIndicatorKey, type RunEvaluatorOptions } from './run-evaluator';
import { CHAMBER, SimulatedChamber, T0, traceOf, type ProcessedRun } from './testing/harness';

/** defense-rules fed directly: in-memory run records (null for a dead-lettered run) and frozen limits. */
class ReferenceChamber {
  private readonly entries: (RunRecord | null)[] = [];
  private readonly limits: Record<string, FrozenLimits> = {};
  private readonly calculator = new IndicatorCalculator();
  private sequence = 0;

  /** `window`: how many of the newest committed runs `evaluate` sees (all when undefined). */
  constructor(
    private readonly strategy: DefenseStrategy,
    private readonly window?: number,
  ) {}

  process(trace: TraceRecord, recipe: string) {
    const sequence = ++this.sequence;
    const now = new Date(T0 + sequence * 60_000);
    const t = createTrace({ runId: trace.runId, timing: trace.timing, svids: trace.svids, steps: trace.steps });
    const readings = readingsFromTrace(t, this.strategy, this.calculator).map((r) => ({
      ...r,
      key: storeIndicatorKey(recipe, r.key),
    }));
    const recent = this.window === undefined ? this.entries : this.entries.slice(-this.window);
    const history: ChamberHistory = {
      runs: recent.filter((r): r is RunRecord => r !== null),
      limits: { ...this.limits },
    };
    const fresh: [string, FrozenLimits][] = [];
    const limits = history.limits as Record<string, FrozenLimits>;
    for (const r of readings) {
      const cfg = this.strategy.indicators.find((c) => c.id === r.indicatorId);
      if (r.value === undefined || limits[r.key] || !cfg) continue;
      try {
        const l = maybeEstablishBaseline(history, r.key, cfg, { frozenAt: now.toISOString() });
        if (l) {
          limits[r.key] = l;
          fresh.push([r.key, l]);
        }
      } catch (err) {
        if (!(err instanceof InsufficientBaselineError || err instanceof DegenerateBaselineError)) throw err;
      }
    }
    const evaluation = evaluate(
      history,
      { runId: trace.runId, context: { toolId: CHAMBER.toolId, chamberId: CHAMBER.chamberId, recipe }, readings },
      this.strategy,
    );
    const noPoints = Object.keys(evaluation.record.points).length === 0;
    const deadLettered = noPoints && evaluation.skipped.length > 0;
    if (!deadLettered) for (const [key, l] of fresh) this.limits[key] = l;
    this.entries.push(noPoints ? null : evaluation.record);
    // Limits frozen while evaluating a run that is then dead-lettered are returned but never stored.
    return { evaluation, fresh: fresh.map(([, l]) => l), deadLettered };
  }
}

// ------------------------------------------------------------------------------------------------
// Generated strategies and runs
// ------------------------------------------------------------------------------------------------

const shewhartRules = fc.constantFrom<unknown[]>(
  ['western-electric'],
  ['nelson'],
  ['N1', 'N2'],
  ['WE1', { rule: 'N2', run: 5 }, { rule: 'N5', count: 2, of: 4, sigmas: 1.5 }],
);

const variablesIndicator = fc.record({
  svid: fc.constantFrom('a', 'b', 'c', '*'),
  statistic: fc.constantFrom('mean', 'max', 'std', 'median'),
  window: fc.constantFrom<unknown>({ kind: 'context' }, { kind: 'step', step: 'main' }, { kind: 'step', step: 'main', trimStartSeconds: 1 }),
  chart: fc.oneof(
    fc.record({ type: fc.constant('individuals'), sigmaMethod: fc.constantFrom('moving-range', 'sample-sd'), nSigma: fc.constantFrom(2.5, 3) }),
    fc.record({ type: fc.constant('ewma'), lambda: fc.constantFrom(0.2, 0.5, 1), L: fc.constantFrom(2.5, 3) }),
    fc.record({
      type: fc.constant('cusum'),
      k: fc.constantFrom(0.25, 0.5),
      h: fc.constantFrom(2, 4),
      headStart: fc.constantFrom(0, 1),
      resetOnSignal: fc.boolean(),
    }),
  ),
  rules: shewhartRules,
  spec: fc.option(fc.constantFrom({ usl: 12.5 }, { lsl: 8 }, { lsl: 95, usl: 108 }), { nil: undefined }),
  baseline: fc.record({
    minRuns: fc.integer({ min: 3, max: 8 }),
    exclusion: fc.constantFrom<unknown>(false, { maxPasses: 1 }, { maxPasses: 3 }),
  }),
  action: fc.constantFrom('ALARM', 'ALARM', 'HOLD_CHAMBER'),
});

const attributeIndicator = fc.record({
  svid: fc.constantFrom('a', 'b', '*'),
  statistic: fc.constant('n_missing'),
  chart: fc.record({ type: fc.constantFrom('p', 'np', 'c', 'u') }),
  exposure: fc.constantFrom('window-samples', 'window-seconds'),
  rules: shewhartRules,
  baseline: fc.record({ minRuns: fc.integer({ min: 3, max: 8 }), exclusion: fc.constantFrom<unknown>(false, { maxPasses: 2 }) }),
  action: fc.constant('ALARM'),
});

/** A strategy document: 1-3 indicators, 0-2 escalation rules; normalised so the schema accepts it. */
const strategyDoc = fc
  .record({
    indicators: fc.array(fc.oneof({ weight: 3, arbitrary: variablesIndicator }, { weight: 1, arbitrary: attributeIndicator }), {
      minLength: 1,
      maxLength: 3,
    }),
    escalation: fc.array(fc.record({ alarms: fc.integer({ min: 1, max: 3 }), withinRuns: fc.integer({ min: 3, max: 6 }) }), {
      maxLength: 2,
    }),
  })
  .map(({ indicators, escalation }) => ({
    schemaVersion: 1,
    name: 'generated',
    indicators: indicators.map((raw, i) => {
      const ind: Record<string, unknown> = { id: `i${i}`, ...raw };
      const type = (raw.chart as { type: string }).type;
      if (type === 'ewma' || type === 'cusum') delete ind['rules'];
      if (type === 'c') delete ind['exposure'];
      if (ind['spec'] === undefined) delete ind['spec'];
      return ind;
    }),
    escalation: escalation.map((e) => ({ ...e, action: 'HOLD_CHAMBER' })),
  }));

interface RunPlan {
  readonly seed: number;
  readonly runs: number;
  /** Share of samples that are NaN / ±Infinity. */
  readonly nanRate: number;
  /** Chance that an SVID is all NaN in a run (no reading), and that every SVID is (dead letter). */
  readonly svidGapRate: number;
  readonly deadRate: number;
  /** Run index and size (in sigmas) of a mean shift, or no shift. */
  readonly shiftAt: number;
  readonly shiftSigmas: number;
  /** Chance that a run uses the second recipe. */
  readonly otherRecipeRate: number;
}

/** Run plans; `sparse: false` keeps indicators present in most runs (few gaps, exposure by samples). */
function runPlan(sparse: boolean) {
  return fc.record({
    seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    runs: sparse ? fc.integer({ min: 8, max: 70 }) : fc.integer({ min: 100, max: 160 }),
    nanRate: sparse ? fc.constantFrom(0, 0.05, 0.6) : fc.constantFrom(0, 0.05),
    svidGapRate: sparse ? fc.constantFrom(0, 0.05, 0.2) : fc.constantFrom(0, 0.05),
    deadRate: fc.constantFrom(0, 0.05),
    shiftAt: fc.integer({ min: 0, max: sparse ? 70 : 160 }),
    shiftSigmas: fc.constantFrom(0, 1.5, 4, -3),
    otherRecipeRate: fc.constantFrom(0, 0, 0.3),
  });
}

const LEVEL = { a: [10, 1], b: [100, 5] } as const;

/** Traces of 12 samples at 2 Hz (steps `ramp` at 0, `main` at 3) per the plan; SVID `c` is constant. */
function* plannedRuns(plan: RunPlan): Generator<{ trace: TraceRecord; recipe: string }> {
  const rand = seededRandom(plan.seed);
  for (let i = 0; i < plan.runs; i++) {
    const dead = rand() < plan.deadRate;
    const svids: Record<string, number[]> = {};
    for (const [name, [level, sd]] of Object.entries(LEVEL)) {
      const gap = dead || rand() < plan.svidGapRate;
      const runLevel = level + sd * (normalDeviate(rand) + (i >= plan.shiftAt ? plan.shiftSigmas : 0));
      svids[name] = Array.from({ length: 12 }, () => {
        if (gap) return NaN;
        const u = rand();
        if (u < plan.nanRate) return u < plan.nanRate / 3 ? Infinity : NaN;
        return runLevel + 0.2 * sd * normalDeviate(rand);
      });
    }
    svids['c'] = new Array<number>(12).fill(dead ? NaN : 5);
    yield {
      trace: traceOf(`run-${i + 1}`, svids, {
        frequencyHz: 2,
        steps: [
          { name: 'ramp', startIndex: 0 },
          { name: 'main', startIndex: 3 },
        ],
      }),
      recipe: rand() < plan.otherRecipeRate ? 'R2' : 'R1',
    };
  }
}

// ------------------------------------------------------------------------------------------------
// Comparison
// ------------------------------------------------------------------------------------------------

function finiteLimits(l: Violation['limits']): Record<string, number | null> {
  const out: Record<string, number | null> = { version: l.version };
  for (const [k, v] of Object.entries(l)) if (k !== 'version' && v !== undefined && Number.isFinite(v)) out[k] = v;
  return out;
}

function violationView(v: Violation) {
  return { rule: v.rule, key: v.indicator.key, action: v.action, value: v.value, limits: finiteLimits(v.limits), points: v.points };
}

/** The violations a run's one alarm lists, in the shape of {@link violationView}. */
function alarmViews(alarms: readonly AlarmInput[]) {
  expect(alarms.length).toBeLessThanOrEqual(1);
  expect(alarms.every((a) => a.ruleId === 'RUN')).toBe(true);
  const listed = (alarms[0]?.details?.['violations'] ?? []) as Record<string, unknown>[];
  return listed.map((v) => ({ rule: v['rule'] as string, key: v['indicatorKey'], action: v['action'], value: v['value'], limits: v['limits'], points: v['points'] }));
}

interface Outcome {
  readonly deadLettered: boolean;
  readonly evaluation: Evaluation;
  readonly fresh: readonly FrozenLimits[];
}

/**
 * The evaluator's run (through the store) and the reference's run, in one comparable shape. With
 * `cusumExcursion: 'suffix'`, a CUSUM violation may cite only the newest points of its excursion (those
 * within the loaded history); its sum, run length and everything else must still be equal.
 */
function comparable(stored: ProcessedRun, ref: Outcome, cusumExcursion: 'exact' | 'suffix') {
  const e = stored.evaluation;
  const refHold = ref.evaluation.actions.find((a) => a.type === 'HOLD_CHAMBER');
  const expected = {
    deadLettered: ref.deadLettered,
    points: ref.evaluation.record.points,
    alarmedBits: e.points.map(() => ref.evaluation.record.alarmed),
    alarms: ref.evaluation.violations.map(violationView),
    holdReasons: refHold && 'reasons' in refHold ? refHold.reasons.join('; ') : undefined,
    newLimits: ref.fresh.map((limits) => ({ ok: true, limits })),
    skipped: ref.evaluation.skipped.map((s) => ({ indicatorKey: s.key, reason: `${s.reason}: ${s.detail}` })),
  };
  const alarms = alarmViews(e.alarms);
  const suffixOk = alarms.every((a, i) => {
    const want = expected.alarms[i];
    if (cusumExcursion === 'exact' || !want?.rule.startsWith('CUSUM_') || !Array.isArray(a.points)) return true;
    const ok = a.points.length >= 1 && JSON.stringify(want.points.slice(-a.points.length)) === JSON.stringify(a.points);
    if (ok) a.points = want.points as unknown as typeof a.points;
    return ok;
  });
  const actual = {
    deadLettered: stored.deadLettered,
    points: Object.fromEntries(e.points.map((p) => [p.indicatorKey, decodePoint(p)])),
    alarmedBits: e.points.map((p) => (p.flags & POINT_FLAGS.RUN_ALARMED) !== 0),
    alarms: suffixOk ? alarms : alarmViews(e.alarms),
    // The hold's reason is the rules' reasons followed by the run.
    holdReasons: e.hold ? e.hold.reason.slice(0, expected.holdReasons?.length ?? 0) : undefined,
    newLimits: e.newLimitSets.map((l) => decodeLimits(l)),
    skipped: e.skipped,
  };
  return { actual, expected };
}

function replay(doc: object, plan: RunPlan, window: 'evaluator' | 'unbounded', options: RunEvaluatorOptions = {}) {
  const evaluator = createRunEvaluator(options);
  const strategy = parseStrategy(doc);
  const chamber = new SimulatedChamber(evaluator);
  const reference = new ReferenceChamber(strategy, window === 'evaluator' ? evaluator.fullHistoryRuns(doc) : undefined);
  const stats = { runs: 0, alarms: 0, holds: 0, baselines: 0, dead: 0 };
  for (const { trace, recipe } of plannedRuns(plan)) {
    const stored = chamber.process(trace, recipe, doc);
    const { actual, expected } = comparable(stored, reference.process(trace, recipe), window === 'evaluator' ? 'exact' : 'suffix');
    expect({ run: trace.runId, ...actual }).toEqual({ run: trace.runId, ...expected });
    stats.runs++;
    stats.alarms += alarmViews(stored.evaluation.alarms).length;
    stats.holds += stored.evaluation.hold ? 1 : 0;
    stats.baselines += stored.evaluation.newLimitSets.length;
    stats.dead += stored.deadLettered ? 1 : 0;
  }
  return stats;
}

describe('store round trip (property)', () => {
  it('evaluating through encoded and decoded store records equals feeding defense-rules its own records', () => {
    const totals = { runs: 0, alarms: 0, holds: 0, baselines: 0, dead: 0 };
    fc.assert(
      // Tight history windows (as little as requiredHistoryRuns) put dead-lettered runs, gaps and
      // excursions at the window's edge, where a lossy codec would show.
      fc.property(strategyDoc, runPlan(true), fc.integer({ min: 0, max: 3 }), (doc, plan, extra) => {
        fc.pre(validateStrategy(doc).ok);
        const s = replay(doc, plan, 'evaluator', { minHistoryRuns: 1, extraHistoryRuns: extra });
        for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += s[k];
      }),
      { seed: 20240501, numRuns: 150 },
    );
    // The generated cases exercise what the property is about.
    expect(totals.baselines).toBeGreaterThan(100);
    expect(totals.alarms).toBeGreaterThan(100);
    expect(totals.holds).toBeGreaterThan(20);
    expect(totals.dead).toBeGreaterThan(5);
  });

  // With indicators present in most runs, the history the evaluator asks for by default (at least
  // 100 runs) holds everything the rules and Phase I read, so the bounded history changes nothing but
  // the length of a CUSUM excursion's citation. (A sparse indicator, missing from most runs, collects
  // its Phase I points within that window only, so its baseline can come later than with all history.)
  it("the evaluator's history window holds what the rules need: same results as unbounded history", () => {
    fc.assert(
      fc.property(strategyDoc, runPlan(false), (doc, plan) => {
        fc.pre(validateStrategy(doc).ok);
        fc.pre(!JSON.stringify(doc).includes('window-seconds'));
        replay(doc, plan, 'unbounded');
      }),
      { seed: 7, numRuns: 40 },
    );
  });
});
