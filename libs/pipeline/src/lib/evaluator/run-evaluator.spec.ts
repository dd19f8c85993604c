import { StrategyValidationError } from '@defender/defense-rules';
import { TraceValidationError } from '@defender/uchart';
import { holdIdOf } from './alarms';
import { decodeLimits } from './codec';
import { EvaluatorConfigError, InvalidStrategyDocumentError, InvalidTraceError } from './errors';
import { describeFlags, POINT_FLAGS } from './flags';
import { createRunEvaluator } from './run-evaluator';
import { strategyScopesForRun, type RunPointSet, type StrategyScopeInfo } from '@defender/contracts';
import { CHAMBER, notificationOf, SimulatedChamber, T0, traceOf } from './testing/harness';

const RECIPE = 'POLY';
const KEY = `${RECIPE}|p-main`;

/** A pressure trace: 3 ramp samples, then 8 main-step samples whose mean is exactly `mean`. */
function pressureRun(runId: string, mean: number, extra: Record<string, number[]> = {}) {
  const d = [-0.5, 0.5, -0.25, 0.25, -0.125, 0.125, 0, 0];
  return traceOf(
    runId,
    { pressure: [0, 5, 8, ...d.map((x) => mean + x)], ...extra },
    {
      steps: [
        { name: 'ramp', startIndex: 0 },
        { name: 'main', startIndex: 3 },
      ],
    },
  );
}

function strategy(indicator: object = {}, extra: object = {}) {
  return {
    schemaVersion: 1,
    name: 'etch-pm2',
    indicators: [
      {
        id: 'p-main',
        svid: 'pressure',
        statistic: 'mean',
        window: { kind: 'step', step: 'main' },
        baseline: { minRuns: 5 },
        rules: ['western-electric'],
        spec: { usl: 20 },
        ...indicator,
      },
    ],
    escalation: [{ alarms: 2, withinRuns: 5, action: 'HOLD_CHAMBER' }],
    ...extra,
  };
}

const PHASE_ONE = [10.0, 10.2, 9.9, 10.1, 9.8];

describe('createRunEvaluator: baseline, alarms and escalation over stored history', () => {
  const evaluator = createRunEvaluator();
  const doc = strategy();

  function chamberAfterPhaseOne() {
    const chamber = new SimulatedChamber(evaluator);
    const runs = PHASE_ONE.map((m, i) => chamber.process(pressureRun(`run-${i + 1}`, m), RECIPE, doc));
    return { chamber, runs };
  }

  it('collects minRuns Phase I points, then freezes limits that judge the next run already', () => {
    const { chamber, runs } = chamberAfterPhaseOne();
    for (const r of runs) {
      expect(r.evaluation.newLimitSets).toEqual([]);
      expect(r.evaluation.alarms).toEqual([]);
      expect(r.evaluation.points).toEqual([{ indicatorKey: KEY, value: expect.any(Number), flags: 0 }]);
    }
    const sixth = chamber.process(pressureRun('run-6', 10.05), RECIPE, doc);
    const mrBar = 0.25;
    expect(sixth.evaluation.newLimitSets).toEqual([
      {
        ...CHAMBER,
        indicatorKey: KEY,
        version: 1,
        chartType: 'individuals',
        center: expect.closeTo(10, 12),
        sigma: expect.closeTo(mrBar / 1.128, 12),
        lcl: expect.closeTo(10 - (3 * mrBar) / 1.128, 12),
        ucl: expect.closeTo(10 + (3 * mrBar) / 1.128, 12),
        params: { sigmaMethod: 'moving-range', nSigma: 3, mrBar: expect.closeTo(mrBar, 12), exclusionPasses: 0 },
        baseline: { reason: 'initial', runIds: ['run-1', 'run-2', 'run-3', 'run-4', 'run-5'], excludedRunIds: [] },
        createdAt: new Date(T0 + 6 * 60_000),
      },
    ]);
    expect(sixth.evaluation.points).toEqual([
      { indicatorKey: KEY, value: expect.closeTo(10.05, 12), limitsVersion: 1, flags: POINT_FLAGS.NEW_LIMITS },
    ]);
    // Stored, the limits are current from now on; the next run does not establish them again.
    const seventh = chamber.process(pressureRun('run-7', 9.95), RECIPE, doc);
    expect(seventh.evaluation.newLimitSets).toEqual([]);
    expect(seventh.evaluation.points[0]).toEqual({ indicatorKey: KEY, value: expect.closeTo(9.95, 12), limitsVersion: 1, flags: 0 });
  });

  it('raises a mean-shift alarm with full context, then holds the chamber on the 2nd alarm in 5 runs', () => {
    const { chamber } = chamberAfterPhaseOne();
    chamber.process(pressureRun('run-6', 10.05), RECIPE, doc);
    const limits = chamber.limits[0];
    const shifted = chamber.process(pressureRun('run-7', 13), RECIPE, doc).evaluation;
    // One alarm for the run, listing its violation with every limit and the points of the pattern.
    expect(shifted.alarms).toEqual([
      {
        ruleId: 'RUN',
        indicatorKey: KEY,
        action: 'ALARM',
        value: expect.closeTo(13, 12),
        lcl: limits.lcl,
        ucl: limits.ucl,
        center: limits.center,
        recipe: RECIPE,
        step: 'main',
        svid: 'pressure',
        statistic: 'mean',
        message: expect.stringMatching(
          /^WE1 on ETCH01:PM2 run run-7 \(recipe POLY\): 1 violation: WE1 on pressure mean \(step main\): one point beyond the control limits; value 13 \(LCL 9\.33\d*, centre 10, UCL 10\.66\d*, limits v1\)$/,
        ),
        details: {
          kind: 'run',
          toolId: 'ETCH01',
          chamberId: 'PM2',
          runId: 'run-7',
          sequence: 7,
          recipe: RECIPE,
          modelVersion: null,
          rules: ['WE1'],
          t2: null,
          spe: null,
          violationCount: 1,
          byRule: { WE1: 1 },
          violations: [
            {
              rule: 'WE1',
              indicatorKey: KEY,
              indicatorId: 'p-main',
              svid: 'pressure',
              statistic: 'mean',
              window: { kind: 'step', step: 'main' },
              value: expect.closeTo(13, 12),
              lcl: limits.lcl,
              ucl: limits.ucl,
              center: limits.center,
              limits: { version: 1, center: limits.center, sigma: limits.sigma, lcl: limits.lcl, ucl: limits.ucl },
              action: 'ALARM',
              description: 'one point beyond the control limits',
              points: [{ runId: 'run-7', value: expect.closeTo(13, 12) }],
            },
          ],
        },
      },
    ]);
    expect(shifted.hold).toBeUndefined();
    expect(describeFlags(shifted.points[0].flags)).toEqual(['RUN_ALARMED', 'VIOLATION', 'WE1']);

    const calm = chamber.process(pressureRun('run-8', 10), RECIPE, doc).evaluation;
    expect(calm.alarms).toEqual([]);
    expect(calm.points[0].flags).toBe(0);

    // The only memory of run 7's alarm is the RUN_ALARMED bit of its stored point.
    const again = chamber.process(pressureRun('run-9', 13.5), RECIPE, doc);
    expect(again.input.history.map((h) => h.runId)).toContain('run-7');
    expect(again.evaluation.alarms.map((a) => [a.ruleId, a.details?.['rules']])).toEqual([['RUN', ['WE1', 'WE2']]]);
    const violations = again.evaluation.alarms[0]?.details?.['violations'] as { points: unknown }[];
    expect(violations[1]?.points).toEqual([
      { runId: 'run-7', value: expect.closeTo(13, 12) },
      { runId: 'run-9', value: expect.closeTo(13.5, 12) },
    ]);
    expect(again.evaluation.hold).toEqual({
      holdId: 'hold:ETCH01:PM2:9',
      ruleId: 'escalation',
      reason: 'escalation: 2 alarmed runs in the last 5 (threshold 2) (run run-9, sequence 9, recipe POLY)',
    });
    expect(describeFlags(again.evaluation.points[0].flags)).toEqual(['RUN_ALARMED', 'VIOLATION', 'RUN_HOLD', 'WE1', 'WE2']);

    // A replay of the same run (same input) gives the same records: same alarms, same hold id.
    expect(evaluator.evaluate(again.input)).toEqual(again.evaluation);
  });

  it('does not escalate when the earlier alarm has left the window', () => {
    const { chamber } = chamberAfterPhaseOne();
    chamber.process(pressureRun('run-6', 13), RECIPE, doc);
    for (let i = 7; i <= 10; i++) chamber.process(pressureRun(`run-${i}`, 10), RECIPE, doc);
    const r = chamber.process(pressureRun('run-11', 13), RECIPE, doc).evaluation;
    expect(r.alarms.map((a) => [a.ruleId, a.details?.['rules']])).toEqual([['RUN', ['WE1']]]);
    expect(r.hold).toBeUndefined();
  });

  it('holds at once when the violated indicator says HOLD_CHAMBER', () => {
    const hold = strategy({ action: 'HOLD_CHAMBER' }, { escalation: [] });
    const chamber = new SimulatedChamber(evaluator);
    PHASE_ONE.forEach((m, i) => chamber.process(pressureRun(`run-${i + 1}`, m), RECIPE, hold));
    const r = chamber.process(pressureRun('run-6', 25), RECIPE, hold).evaluation;
    expect(r.alarms.map((a) => [a.ruleId, a.action, a.details?.['rules']])).toEqual([['RUN', 'HOLD_CHAMBER', ['SPEC_USL', 'WE1']]]);
    // The alarm's own fields are its first violation's, as compared: the spec limit crossed.
    expect(r.alarms[0]).toMatchObject({ value: 25, ucl: 20, details: { violations: [{ rule: 'SPEC_USL', ucl: 20, limits: { version: 1, usl: 20 } }, { rule: 'WE1' }] } });
    expect(r.alarms[0].message).toContain('value 25 > USL 20');
    expect(r.hold).toEqual({
      holdId: 'hold:ETCH01:PM2:6',
      ruleId: 'indicator-action',
      reason: `violation with action HOLD_CHAMBER: ${KEY} SPEC_USL, ${KEY} WE1 (run run-6, sequence 6, recipe POLY)`,
    });
  });

  it('keeps recipes apart: one chart, baseline and limit set per recipe', () => {
    const doc = strategy({ spec: undefined });
    const chamber = new SimulatedChamber(evaluator);
    const out = [];
    for (let i = 0; i < 12; i++) {
      const recipe = i % 2 ? 'B' : 'A';
      const mean = (recipe === 'A' ? 10 : 50) + PHASE_ONE[i % 5] - 10;
      out.push(chamber.process(pressureRun(`run-${i + 1}`, mean), recipe, doc).evaluation);
    }
    expect(out.flatMap((e) => e.alarms)).toEqual([]);
    expect(chamber.limits.map((l) => [l.indicatorKey, Math.round(l.center)]).sort()).toEqual([
      ['A|p-main', 10],
      ['B|p-main', 50],
    ]);
  });
});

describe('createRunEvaluator: history decoded only as far back as the rules read', () => {
  const evaluator = createRunEvaluator();
  const doc = strategy({ baseline: { minRuns: 5 }, rules: ['western-electric'] });

  /** `sets` whose `points` count their reads, optionally with the count and flag summaries a cache gives. */
  function counting(sets: readonly RunPointSet[], summaries: boolean): { sets: RunPointSet[]; reads: () => number } {
    let reads = 0;
    const out = sets.map((s) => {
      const { points, ...rest } = s;
      const o = { ...rest } as RunPointSet & { points: readonly unknown[] };
      Object.defineProperty(o, 'points', {
        enumerable: true,
        get: () => {
          reads++;
          return points;
        },
      });
      if (summaries) Object.assign(o, { pointCount: points.length, flagsUnion: points.reduce((u, p) => u | p.flags, 0) >>> 0 });
      return o;
    });
    return { sets: out, reads: () => reads };
  }

  it('with frozen limits reads only the newest runs of a 100-run history, with the same result', () => {
    const chamber = new SimulatedChamber(evaluator);
    // Phase I, then 95 runs judged against the frozen limits, with shifts that alarm and hold now and then.
    for (let i = 0; i < 100; i++) {
      const mean = i < 5 ? PHASE_ONE[i]! : i % 17 === 0 || i % 17 === 2 ? 13 : 10 + ((i * 7) % 5) / 50 - 0.04;
      chamber.process(pressureRun(`run-${i + 1}`, mean), RECIPE, doc);
    }
    const history = chamber.committed.slice(-evaluator.fullHistoryRuns(doc));
    expect(history).toHaveLength(100);
    const input = (h: RunPointSet[], runId: string, mean: number) => ({
      chamber: CHAMBER,
      sequence: 101,
      notification: notificationOf(pressureRun(runId, mean), RECIPE),
      trace: pressureRun(runId, mean),
      history: h,
      limits: chamber.limits,
      strategy: doc,
      now: new Date(T0 + 101 * 60_000),
    });
    for (const mean of [10, 13]) {
      const eager = evaluator.evaluate(input(history, 'run-101', mean));
      const summarized = counting(history, true);
      expect(evaluator.evaluate(input(summarized.sets, 'run-101', mean))).toEqual(eager);
      // WE looks 7 points back, the EWMA / CUSUM state 1; escalation and Phase I read no points
      // with the summaries.
      expect(summarized.reads()).toBeLessThanOrEqual(7);
      const bare = counting(history, false);
      expect(evaluator.evaluate(input(bare.sets, 'run-101', mean))).toEqual(eager);
      // Without summaries each run is read once to learn whether it is empty, and the ones the rules
      // reach once more.
      expect(bare.reads()).toBeLessThanOrEqual(history.length + 7);
    }
    // The shifted run alarms (and its context needs the decoded history): same alarms either way.
    expect(evaluator.evaluate(input(counting(history, true).sets, 'run-101', 13)).alarms.length).toBeGreaterThan(0);
  });
});

describe('createRunEvaluator: chambers running several recipes', () => {
  it('finds each recipe its 20 Phase I points in the default history, however the recipes interleave', () => {
    const doc = strategy({ spec: undefined, baseline: { minRuns: 20 } });
    const chamber = new SimulatedChamber(createRunEvaluator());
    const recipes = ['A', 'B', 'C', 'D'];
    const frozen: [string, number][] = [];
    for (let i = 0; i < 84; i++) {
      const recipe = recipes[i % 4];
      const r = chamber.process(pressureRun(`run-${i + 1}`, 10 + (PHASE_ONE[i % 5] - 10) * (1 + (i % 3))), recipe, doc);
      for (const l of r.evaluation.newLimitSets) frozen.push([l.indicatorKey, r.sequence]);
    }
    // Each recipe's 21st run (its 20 Phase I points are then in the last 100 runs of the chamber).
    expect(frozen).toEqual([
      ['A|p-main', 81],
      ['B|p-main', 82],
      ['C|p-main', 83],
      ['D|p-main', 84],
    ]);
  });
});

describe('createRunEvaluator: NaN-heavy traces', () => {
  const evaluator = createRunEvaluator();

  it('charts the valid samples, skips an SVID with none, and excludes ±Infinity', () => {
    const both = {
      ...strategy(),
      indicators: [
        { id: 'a-mean', svid: 'a', statistic: 'mean', baseline: { minRuns: 3 } },
        { id: 'b-mean', svid: 'b', statistic: 'mean', baseline: { minRuns: 3 } },
        { id: 'a-missing', svid: 'a', statistic: 'n_missing', chart: { type: 'p' }, baseline: { minRuns: 3 } },
      ],
    };
    const a = new Array<number>(1000).fill(NaN);
    a[10] = 4;
    a[500] = 6;
    a[501] = Infinity;
    a[502] = -Infinity;
    const chamber = new SimulatedChamber(evaluator);
    const r = chamber.process(traceOf('run-1', { a, b: new Array<number>(1000).fill(NaN) }), RECIPE, both).evaluation;
    expect(r.points).toEqual([
      { indicatorKey: `${RECIPE}|a-mean`, value: 5, flags: 0 },
      // p chart: the count, its size, and the charted proportion as chart state.
      { indicatorKey: `${RECIPE}|a-missing`, value: 998, size: 1000, flags: 0, chart: { statistic: 0.998 } },
    ]);
    expect(r.skipped).toEqual([
      { indicatorKey: `${RECIPE}|b-mean`, reason: 'no-value: no-valid-samples: all 1000 samples are NaN/Inf' },
    ]);
  });

  it('an all-NaN run yields no point (the worker dead-letters it) and Phase I goes on around it', () => {
    const chamber = new SimulatedChamber(evaluator);
    const s = strategy();
    const runs = [
      chamber.process(pressureRun('run-1', PHASE_ONE[0]), RECIPE, s),
      chamber.process(pressureRun('run-2', PHASE_ONE[1]), RECIPE, s),
      chamber.process(traceOf('run-3', { pressure: new Array<number>(11).fill(NaN) }, { steps: [{ name: 'main', startIndex: 0 }] }), RECIPE, s),
      chamber.process(pressureRun('run-4', PHASE_ONE[2]), RECIPE, s),
      chamber.process(pressureRun('run-5', PHASE_ONE[3]), RECIPE, s),
      chamber.process(pressureRun('run-6', PHASE_ONE[4]), RECIPE, s),
      chamber.process(pressureRun('run-7', 10), RECIPE, s),
    ];
    expect(runs[2].deadLettered).toBe(true);
    expect(runs[2].evaluation.skipped).toEqual([
      { indicatorKey: KEY, reason: 'no-value: no-valid-samples: all 11 samples are NaN/Inf' },
    ]);
    expect(runs[5].evaluation.newLimitSets).toEqual([]);
    expect(runs[6].input.history.map((h) => h.points.length)).toEqual([1, 1, 0, 1, 1, 1]);
    expect(runs[6].evaluation.newLimitSets.map((l) => l.baseline.runIds)).toEqual([
      ['run-1', 'run-2', 'run-4', 'run-5', 'run-6'],
    ]);
  });
});

describe('createRunEvaluator: strategy documents', () => {
  const invalid = { schemaVersion: 1, name: 'broken', indicators: [{ id: 'bad id!', svid: 'a', statistic: 'mean' }] };
  const trace = traceOf('run-1', { a: [1, 2, 3], b: [4, 5, 7] });

  it('never judges a run by another strategy when the stored one is invalid: InvalidStrategyDocumentError, dead-letter reason invalid-strategy', () => {
    const evaluator = createRunEvaluator({ minHistoryRuns: 1 });
    const chamber = new SimulatedChamber(evaluator);
    let caught: unknown;
    try {
      chamber.process(trace, RECIPE, invalid);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidStrategyDocumentError);
    const err = caught as InvalidStrategyDocumentError;
    expect(err.name).toBe('InvalidStrategyDocumentError');
    expect(err.deadLetterReason).toBe('invalid-strategy');
    expect(err.issues.map((i) => i.path)).toEqual(['indicators.0.id']);
    expect(err.message).toMatch(/^stored defense strategy is invalid: indicators\.0\.id: /);
    expect(err.cause).toBeInstanceOf(StrategyValidationError);
    expect(() => chamber.process(trace, RECIPE, { schemaVersion: 2 })).toThrow(/unsupported version 2/);
    // The history a worker reads before evaluating: enough for any strategy the chamber may get once fixed.
    expect(evaluator.fullHistoryRuns(invalid)).toBe(90 + 20);
    expect(evaluator.fullHistoryRuns(strategy())).toBe(8 + 20);
    // Read first: what the steady state needs (escalation's 5 runs; WE4 looks at 8), plus 5.
    expect(evaluator.historyRuns(invalid)).toBe(5 + 5);
    expect(evaluator.historyRuns(strategy())).toBe(8 + 5);
  });

  it('gives no point for a run whose every sample is missing under the default strategy (a worker dead-letters it)', () => {
    const r = new SimulatedChamber(createRunEvaluator()).process(traceOf('run-1', { a: [NaN, NaN, NaN], b: [NaN, NaN, NaN] }), RECIPE, undefined).evaluation;
    expect(r.points).toEqual([]);
    expect(r.alarms).toEqual([]);
    expect(r.skipped).toEqual([{ indicatorKey: 'POLY|m:model', reason: 'no-value: no monitored indicator has a value in this run' }]);
  });

  it('uses no stored strategy, JSON text, and out-of-scope documents as documented', () => {
    const evaluator = createRunEvaluator({ minHistoryRuns: 1 });
    const keys = (doc: unknown, recipe = RECIPE) =>
      new SimulatedChamber(evaluator).process(trace, recipe, doc).evaluation.points.map((p) => p.indicatorKey);
    const own = { schemaVersion: 1, name: 'own', indicators: [{ id: 'x', svid: 'b', statistic: 'max' }] };
    // No strategy: the chamber monitor (the default), which stores every indicator in Phase I and its model point.
    const monitored = keys(undefined);
    expect(monitored).toContain('POLY|m:model');
    expect(monitored).toEqual(expect.arrayContaining(['POLY|m/a@seg4of4:mean', 'POLY|m/b@seg4of4:mean']));
    expect(monitored.every((k) => k.startsWith('POLY|m'))).toBe(true);
    expect(keys(JSON.stringify(own))).toEqual(['POLY|x']);
    const scoped = { ...own, scope: { recipe: 'OTHER' } };
    expect(keys(scoped)).toEqual(monitored);
    expect(keys(scoped, 'OTHER')).toEqual(['OTHER|x']);
    // A scoped document may leave some runs to the default strategy: enough history for both (the
    // monitor extends its Phase I to 90 runs).
    expect(evaluator.fullHistoryRuns(own)).toBe(20 + 20);
    expect(evaluator.fullHistoryRuns({ ...own, indicators: [{ ...own.indicators[0], baseline: { minRuns: 5 } }] })).toBe(8 + 20);
    expect(evaluator.fullHistoryRuns({ ...scoped, indicators: [{ ...own.indicators[0], baseline: { minRuns: 5 } }] })).toBe(90 + 20);
    expect(createRunEvaluator({ extraHistoryRuns: 0, minHistoryRuns: 1 }).fullHistoryRuns(undefined)).toBe(90);
    // By default at least 100 runs, so that each of several recipes finds its Phase I points.
    expect(createRunEvaluator().fullHistoryRuns(own)).toBe(100);
    expect(createRunEvaluator().fullHistoryRuns(undefined)).toBe(110);
    // The steady state's: the longest rule or escalation window, plus 5 (never more than the most).
    expect(evaluator.historyRuns(own)).toBe(8 + 5);
    expect(evaluator.historyRuns({ ...scoped, indicators: [{ ...own.indicators[0], baseline: { minRuns: 5 } }] })).toBe(8 + 5);
    expect(createRunEvaluator({ steadyExtraHistoryRuns: 0, minHistoryRuns: 1 }).historyRuns(undefined)).toBe(5);
    expect(createRunEvaluator({ steadyExtraHistoryRuns: 30 }).historyRuns(undefined)).toBe(35);
    expect(createRunEvaluator().historyRuns(undefined)).toBe(10);
  });

  it('judges a run by the document found under a scope key of its lookup order, refused when its own scope disagrees with the key', () => {
    const evaluator = createRunEvaluator({ minHistoryRuns: 1 });
    const [chamberRecipe, chamberOnly, legacy, recipeOnly, fallback] = strategyScopesForRun(CHAMBER, RECIPE) as StrategyScopeInfo[];
    const own = { schemaVersion: 1, name: 'own', indicators: [{ id: 'x', svid: 'b', statistic: 'max' }] };
    const keys = (doc: unknown, at: StrategyScopeInfo | undefined) => new SimulatedChamber(evaluator).process(trace, RECIPE, doc, at).evaluation.points.map((p) => p.indicatorKey);
    const refusal = (doc: unknown, at: StrategyScopeInfo | undefined): InvalidStrategyDocumentError => {
      try {
        new SimulatedChamber(evaluator).process(trace, RECIPE, doc, at);
      } catch (err) {
        if (err instanceof InvalidStrategyDocumentError) return err;
        throw err;
      }
      throw new Error('the run was judged');
    };
    // No scope of its own, or one repeating its key: the document judges the run, whatever the key.
    for (const at of [chamberRecipe, chamberOnly, legacy, recipeOnly, fallback]) expect(keys(own, at)).toEqual(['POLY|x']);
    expect(keys({ ...own, scope: { chamber: 'ETCH01:PM2', recipe: RECIPE } }, chamberRecipe)).toEqual(['POLY|x']);
    expect(keys({ ...own, scope: { chamber: 'ETCH01:PM2' } }, legacy)).toEqual(['POLY|x']);
    expect(keys({ ...own, scope: { recipe: RECIPE } }, recipeOnly)).toEqual(['POLY|x']);
    // Another chamber than its key: refused, both named (never the default strategy instead).
    const otherChamber = refusal({ ...own, scope: { chamber: 'CVD09:PM1' } }, chamberOnly);
    expect(otherChamber.deadLetterReason).toBe('invalid-strategy');
    expect(otherChamber.message).toBe(
      'stored defense strategy is invalid: scope.chamber: names chamber CVD09:PM1 but it is stored under scope "chamber/ETCH01:PM2", for chamber ETCH01:PM2',
    );
    // Another recipe than its key, or a narrower scope than its key (it would leave some runs to nobody).
    expect(refusal({ ...own, scope: { recipe: 'OTHER' } }, chamberRecipe).issues.map((i) => i.path)).toEqual(['scope.recipe']);
    expect(refusal({ ...own, scope: { recipe: RECIPE } }, chamberOnly).issues.map((i) => i.path)).toEqual(['scope.recipe']);
    expect(refusal({ ...own, scope: { chamber: 'ETCH01:PM2' } }, fallback).issues.map((i) => i.path)).toEqual(['scope.chamber']);
    // An invalid document stays refused for its own problems.
    expect(refusal(invalid, chamberOnly).issues.map((i) => i.path)).toEqual(['indicators.0.id']);
    // A bare document (no key) keeps the documented behaviour: out of its scope, the default.
    expect(keys({ ...own, scope: { recipe: 'OTHER' } }, undefined)).toContain('POLY|m:model');
  });

  it('reads the history of the strategy that judges the run: a document found under a key needs only its own', () => {
    const evaluator = createRunEvaluator({ minHistoryRuns: 1, extraHistoryRuns: 0 });
    const [, chamberOnly] = strategyScopesForRun(CHAMBER, RECIPE) as StrategyScopeInfo[];
    const own = { schemaVersion: 1, name: 'own', scope: { chamber: 'ETCH01:PM2' }, indicators: [{ id: 'x', svid: 'b', statistic: 'max', baseline: { minRuns: 5 } }] };
    // Found under its key it judges every run it is looked up for: WE4's 8 runs, not the monitor's 90.
    expect(evaluator.fullHistoryRuns(own, chamberOnly)).toBe(8);
    expect(evaluator.historyRuns(own, chamberOnly)).toBe(8);
    // As a bare scoped document, the default strategy may judge some runs instead.
    expect(evaluator.fullHistoryRuns(own)).toBe(90);
    expect(evaluator.fullHistoryRuns(undefined, undefined)).toBe(90);
    expect(evaluator.fullHistoryRuns(invalid, chamberOnly)).toBe(90);
    expect(evaluator.historyRuns(own)).toBe(8 + 5);
    expect(evaluator.historyRuns(undefined, undefined)).toBe(5 + 5);
  });

  it('rejects options out of their domain', () => {
    expect(() => createRunEvaluator({ extraHistoryRuns: -1 })).toThrow(EvaluatorConfigError);
    expect(() => createRunEvaluator({ steadyExtraHistoryRuns: 1.5 })).toThrow('steadyExtraHistoryRuns must be an integer >= 0, got 1.5');
    expect(() => createRunEvaluator({ minHistoryRuns: 0 })).toThrow('minHistoryRuns must be an integer >= 1, got 0');
    expect(() => createRunEvaluator({ strategyCacheSize: 0 })).toThrow('strategyCacheSize must be an integer >= 1, got 0');
  });
});

describe('createRunEvaluator: traces and limits it cannot use', () => {
  const evaluator = createRunEvaluator();

  it('throws InvalidTraceError (dead-letter reason invalid-trace) for a trace the U-chart engine rejects', () => {
    const good = traceOf('run-1', { a: [1, 2, 3] });
    const bad = { ...good, timing: { kind: 'explicit' as const, timesSeconds: Float64Array.of(0, NaN, 2) } };
    const input = {
      chamber: CHAMBER,
      sequence: 1,
      notification: notificationOf(bad, RECIPE),
      trace: bad,
      history: [],
      limits: [],
      strategy: undefined,
      now: new Date(T0),
    };
    let caught: unknown;
    try {
      evaluator.evaluate(input);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidTraceError);
    expect(caught).toMatchObject({ name: 'InvalidTraceError', deadLetterReason: 'invalid-trace', runId: 'run-1' });
    expect((caught as Error).cause).toBeInstanceOf(TraceValidationError);
    expect((caught as Error).message).toContain('timing.timesSeconds[1]: is not finite');
    expect(() => evaluator.evaluate({ ...input, trace: { ...good, runId: 'run-0' } })).toThrow(
      'trace of run run-1 cannot be evaluated: the trace read is of ETCH01:PM2 run run-0',
    );
  });

  it('judges an indicator with unreadable stored limits on spec limits only, and never re-baselines it', () => {
    const chamber = new SimulatedChamber(evaluator);
    chamber.putLimitSet({
      ...CHAMBER,
      indicatorKey: KEY,
      version: 3,
      chartType: 'xbar-r',
      center: 10,
      sigma: 1,
      lcl: 7,
      ucl: 13,
      params: {},
      baseline: { reason: 'manual', runIds: [], excludedRunIds: [] },
      createdAt: new Date(T0),
    });
    const doc = strategy();
    const out = [...PHASE_ONE, 10, 10, 30].map((m, i) => chamber.process(pressureRun(`run-${i + 1}`, m), RECIPE, doc).evaluation);
    expect(out.flatMap((e) => e.newLimitSets)).toEqual([]);
    expect(out[0].skipped).toEqual([{ indicatorKey: KEY, reason: 'unreadable-limits: limits v3 (xbar-r): chart type "xbar-r" is unknown' }]);
    expect(out[7].points[0].limitsVersion).toBeUndefined();
    expect(out[7].alarms.map((a) => [a.ruleId, a.details?.['rules']])).toEqual([['RUN', ['SPEC_USL']]]);
  });
});

describe('hold ids', () => {
  it('are deterministic per chamber and sequence, and bounded to 128 characters', () => {
    expect(holdIdOf(CHAMBER, 42)).toBe('hold:ETCH01:PM2:42');
    const long = { toolId: 'T'.repeat(128), chamberId: 'C'.repeat(128) };
    const id = holdIdOf(long, 42);
    expect(id).toMatch(/^hold:[0-9a-f]{16}:42$/);
    expect(holdIdOf(long, 42)).toBe(id);
    expect(holdIdOf(long, 43)).not.toBe(id);
  });
});

describe('limit sets written by the evaluator read back', () => {
  it('decodes what it encodes (checked in every scenario above through the store round trip)', () => {
    const chamber = new SimulatedChamber(createRunEvaluator());
    [...PHASE_ONE, 10].forEach((m, i) => chamber.process(pressureRun(`run-${i + 1}`, m), RECIPE, strategy()));
    const decoded = decodeLimits(chamber.limits[0]);
    expect(decoded).toMatchObject({ ok: true, limits: { version: 1, center: expect.closeTo(10, 12), frozenAt: new Date(T0 + 6 * 60_000).toISOString() } });
  });
});
