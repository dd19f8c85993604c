/**
 * The chamber monitor through the production evaluator, with every record round-tripped through JSON
 * as the store would (testing/harness): Phase I, the model as a limit set, one run-level alarm listing
 * every violation, escalation to a hold, and what the store accepts.
 */
import type { StrategyScopeInfo } from '@defender/contracts';
import { DEFAULT_STRATEGY_DOCUMENT } from '@defender/defense-rules';
import { normalDeviate, seededRandom } from '@defender/hashing';
import { describeFlags, POINT_FLAGS } from './flags';
import { MONITOR_PART_CHART_TYPE } from './chart-types';
import { MONITOR_CHART_TYPE } from './monitor-stage';
import { PENDING_BASELINE_CHART_TYPE, rebaselineRecords } from './rebaseline';
import { createRunEvaluator } from './run-evaluator';
import type { RunEvaluator } from '../ports';
import { SimulatedChamber, traceOf } from './testing/harness';

const STEPS = [
  { name: 'Ramp', startIndex: 0 },
  { name: 'Main', startIndex: 20 },
];

/** A run of two correlated sensors and a setpoint: a run offset shared by both, per-sample noise. */
function run(i: number, rand: () => number, fault?: { readonly pressureStep?: number; readonly setpoint?: number }) {
  const offset = normalDeviate(rand);
  const pressure: number[] = [];
  const flow: number[] = [];
  const setpoint: number[] = [];
  for (let t = 0; t < 60; t++) {
    const main = t >= 20;
    pressure.push((main ? 40 : 10 + t) + offset + 0.2 * normalDeviate(rand) + (main && fault?.pressureStep ? fault.pressureStep : 0));
    flow.push((main ? 200 : 100) + 5 * offset + normalDeviate(rand));
    setpoint.push(main ? (fault?.setpoint ?? 500) : 0);
  }
  return traceOf(`run-${i}`, { Pressure: pressure, Flow: flow, SP_001: setpoint }, { steps: STEPS });
}

/**
 * The same runs through the steady state's reads and through a reference that reads as many runs as
 * any run may need, every time: `step` processes a trace in both, expects the same evaluation and
 * records in `longAt` the runs for which the steady chamber read more than its steady history.
 */
function wholeAndSteady() {
  const base = createRunEvaluator();
  // Reads as many runs as any run may need: `base` judges every run of it (`evaluate` unchanged).
  const whole = new SimulatedChamber(Object.assign(Object.create(base) as RunEvaluator, { historyRuns: (d: unknown, sc?: StrategyScopeInfo) => base.fullHistoryRuns(d, sc) }));
  const steady = new SimulatedChamber(base);
  const longAt: number[] = [];
  const step = (i: number, trace: Parameters<SimulatedChamber['process']>[0], recipe: string, strategy: unknown) => {
    const before = steady.longReads;
    const a = whole.process(trace, recipe, strategy);
    const b = steady.process(trace, recipe, strategy);
    expect({ run: i, ...b.evaluation }).toEqual({ run: i, ...a.evaluation });
    if (steady.longReads > before) longAt.push(i);
  };
  return { whole, steady, longAt, step };
}

describe('chamber monitor in the run evaluator', () => {
  const doc = { ...DEFAULT_STRATEGY_DOCUMENT, monitor: { baseline: { minRuns: 30 }, mewma: false } };

  it('collects Phase I, stores the model once, then judges each run with at most one alarm', () => {
    const rand = seededRandom(11);
    const chamber = new SimulatedChamber(createRunEvaluator());
    const phase = Array.from({ length: 30 }, (_, i) => chamber.process(run(i, rand), 'R1', doc));
    expect(phase.slice(0, 29).every((p) => p.evaluation.alarms.length === 0 && p.evaluation.monitorModel === undefined)).toBe(true);
    const last = phase[29]?.evaluation;
    // The model is a record of its own, committed with the run that fitted it; no limit set holds it.
    expect(last?.newLimitSets).toEqual([]);
    const model = last?.monitorModel;
    expect(model).toMatchObject({ version: 1, reason: 'initial', excludedRunIds: [] });
    expect(last?.monitorState).toMatchObject({ phase: 'judging', modelVersion: 1 });
    expect(chamber.modelVersions().map((m) => [m.recipe, m.version, m.runId])).toEqual([['R1', 1, 'run-29']]);
    const params = model?.model as { baselineRunIds: string[]; variables: string[]; notCharted: { key: string; reason: string }[] };
    expect(params.baselineRunIds).toHaveLength(30);
    // The setpoint is constant in each step: not charted, checked for change.
    expect(params.notCharted.filter((n) => n.key.startsWith('R1|m/SP_001@')).every((n) => n.reason === 'constant' || n.reason === 'missing')).toBe(true);
    expect(params.variables.some((k) => k.startsWith('R1|m/Pressure@Main:'))).toBe(true);
    // The run that completed Phase I is judged already.
    expect(last?.points.find((p) => p.indicatorKey === 'R1|m:model')?.limitsVersion).toBe(1);

    let alarmedRuns = 0;
    for (let i = 30; i < 60; i++) {
      const r = chamber.process(run(i, rand), 'R1', doc);
      expect(r.evaluation.alarms.length).toBeLessThanOrEqual(1);
      if (r.evaluation.alarms.length > 0) alarmedRuns++;
    }
    expect(alarmedRuns).toBeLessThanOrEqual(1);

    // A setpoint that changes, and a pressure level step only in Main: one alarm listing both.
    const bad = chamber.process(run(60, rand, { setpoint: 510, pressureStep: 3 }), 'R1', doc);
    expect(bad.evaluation.alarms).toHaveLength(1);
    const alarm = bad.evaluation.alarms[0];
    expect(alarm?.ruleId).toBe('RUN');
    expect(alarm?.indicatorKey).toBe('R1|m:model');
    const details = alarm?.details as { kind: string; rules: string[]; violations: { rule: string; indicatorKey: string }[] };
    expect(details.kind).toBe('run');
    expect(details.rules).toContain('CONSTANT');
    // Constant windows are checked through the default statistics that measure their level.
    expect(details.violations.filter((v) => v.rule === 'CONSTANT').map((v) => v.indicatorKey).sort()).toEqual([
      'R1|m/SP_001@Main:mean',
    ]);
    expect(details.violations.some((v) => v.indicatorKey.startsWith('R1|m/Pressure@Main:') || v.rule === 'T2' || v.rule === 'SPE')).toBe(true);
    expect(alarm?.message).toMatch(/^[A-Z0-9+]+ on ETCH01:PM2 run run-60 \(recipe R1\): \d+ violations?: /);
    const modelPoint = bad.evaluation.points.find((p) => p.indicatorKey === 'R1|m:model');
    expect(describeFlags(modelPoint?.flags ?? 0)).toContain('RUN_ALARMED');
    // Not-charted indicators are neither computed nor stored after Phase I; the violation is on the alarm.
    expect(bad.evaluation.points.some((p) => p.indicatorKey.startsWith('R1|m/SP_001@'))).toBe(false);

    // Three alarmed runs within five: the third holds the chamber (escalation of run-level alarms).
    const second = chamber.process(run(61, rand, { setpoint: 510 }), 'R1', doc);
    expect(second.evaluation.hold).toBeUndefined();
    const third = chamber.process(run(62, rand, { setpoint: 510 }), 'R1', doc);
    expect(third.evaluation.hold?.ruleId).toBe('escalation');
    expect(third.evaluation.points.every((p) => (p.flags & POINT_FLAGS.RUN_HOLD) !== 0)).toBe(true);
  });

  it('extends Phase I once: refitted on its runs and the unalarmed runs it judged, at the next version', () => {
    const rand = seededRandom(15);
    const chamber = new SimulatedChamber(createRunEvaluator());
    const extending = { ...doc, monitor: { baseline: { minRuns: 30, extendTo: 60 }, mewma: false } };
    const models: { run: number; version: number; reason: string; runs: number }[] = [];
    for (let i = 0; i < 80; i++) {
      const r = chamber.process(run(i, rand, i === 40 ? { setpoint: 510 } : undefined), 'R1', extending);
      const m = r.evaluation.monitorModel;
      if (m) models.push({ run: i, version: m.version, reason: m.reason, runs: (m.model['baselineRunIds'] as string[]).length });
    }
    // v1 after 30 runs; v2 once 60 unalarmed runs exist (the alarmed run 40 is left out), then no more.
    expect(models).toEqual([
      { run: 29, version: 1, reason: 'initial', runs: 30 },
      { run: expect.any(Number) as number, version: 2, reason: 'extended', runs: 60 },
    ]);
    expect(models[1]?.run).toBeGreaterThanOrEqual(60);
    const v2 = chamber.model('R1');
    expect(v2?.version).toBe(2);
    expect(v2?.model['baselineRunIds']).not.toContain('run-40');
    // Not-charted indicators of Phase I stay not charted (the constant setpoint is still checked).
    const params = v2?.model as { notCharted: { key: string }[] };
    expect(params.notCharted.some((n) => n.key === 'R1|m/SP_001@Main:mean')).toBe(true);
  });

  it("carries the adaptive centre in the recipe's state, not in points: after the extension, the state is all the memory a run needs", () => {
    const rand = seededRandom(21);
    const chamber = new SimulatedChamber(createRunEvaluator());
    const extending = { ...doc, monitor: { baseline: { minRuns: 30, extendTo: 40 }, mewma: { lambda: 0.2 } } };
    // A slow level drift of both sensors, followed by the centre.
    const drifting = (i: number) => {
      const t = run(i, rand);
      const shift = (xs: ArrayLike<number>, by: number) => Float64Array.from(xs, (x) => x + by);
      return { ...t, svids: new Map([...t.svids].map(([k, xs]) => [k, k === 'SP_001' ? xs : shift(xs, 0.02 * i)])) };
    };
    const evaluator = createRunEvaluator();
    const states = [];
    for (let i = 0; i < 70; i++) {
      const r = chamber.process(drifting(i), 'R1', extending);
      states.push(r.evaluation.monitorState);
    }
    // Phase I counts its runs; then the runs judged by each version are counted from 1.
    expect(states[0]).toEqual({ phase: 'collecting', modelVersion: 1, runs: 1 });
    expect(states[28]).toEqual({ phase: 'collecting', modelVersion: 1, runs: 29 });
    expect(states[29]).toMatchObject({ phase: 'judging', modelVersion: 1, judgedRuns: 1 });
    const state = chamber.monitorState('R1');
    expect(state).toMatchObject({ phase: 'judging', modelVersion: 2 });
    if (state?.phase !== 'judging') throw new Error('judging expected');
    expect(state.levelOffsets['Pressure']).toBeGreaterThan(0.1); // the drift since the extension's Phase I, followed
    // The setpoint is constant in Phase I, not charted: it has no level to follow.
    expect(Object.keys(state.levelOffsets).sort()).toEqual(['Flow', 'Pressure']);
    expect(state.mewma?.length).toBeGreaterThan(0);
    // No point carries memory: no level points, no counts or MEWMA vector in the model's point.
    const points = chamber.committed.at(-1)!.points;
    expect(points.some((p) => p.indicatorKey.endsWith(':offset'))).toBe(false);
    expect(Object.keys(points.find((p) => p.indicatorKey === 'R1|m:model')?.chart ?? {}).sort()).toEqual(['mewma', 'spe']);
    // The same run judged with the whole history and with none: the same records.
    const judged = chamber.process(drifting(70), 'R1', extending);
    const { historyLimit: _limit, ...read } = judged.input;
    const whole = { ...read, history: chamber.committed.slice(0, -1) };
    expect(whole.history).toHaveLength(70);
    expect(evaluator.evaluate(whole)).toEqual(judged.evaluation);
    expect(evaluator.evaluate({ ...whole, history: [] })).toEqual(judged.evaluation);
    expect(judged.evaluation.monitorState).toMatchObject({ phase: 'judging', modelVersion: 2, judgedRuns: state.judgedRuns + 1 });
  });

  it('reads the steady state\'s history and more only when a run needs it, judging every run as with the whole history', () => {
    const rand = seededRandom(23);
    const extending = { ...doc, monitor: { baseline: { minRuns: 30, extendTo: 40 }, mewma: false } };
    const { whole, steady, longAt, step } = wholeAndSteady();
    const faults = new Set([52, 53, 54, 80, 150]);
    // Two recipes in turn with a third now and then, faults that alarm and hold, a run with no value.
    for (let i = 0; i < 170; i++) {
      const recipe = i % 7 === 6 ? 'R3' : i % 2 === 0 ? 'R1' : 'R2';
      const trace = i === 70 ? traceOf(`run-${i}`, { Pressure: [NaN], Flow: [NaN], SP_001: [NaN] }) : run(i, rand, faults.has(i) ? { pressureStep: 3 } : undefined);
      step(i, trace, recipe, extending);
    }
    const newest = new Map(steady.modelVersions().map((m) => [m.recipe, m.version]));
    // R3 runs too rarely for its Phase I to fit in the history any run reads: it keeps collecting.
    expect([...newest]).toEqual([
      ['R1', 2],
      ['R2', 2],
    ]);
    expect(steady.limits).toEqual([]);
    expect(whole.longReads).toBe(0);
    // The steady reads came without the indicators' values, as from the defender's cache (Phase I runs
    // keep their model point only): points no run judged in the steady state reads.
    expect(whole.leftOut).toBe(0);
    expect(steady.leftOut).toBeGreaterThan(100);
    // The chamber's memory answers the escalation rule and the recipes' states the monitor: a run reads
    // history only where the first run of a recipe finds no state (R2, R3), Phase I completes (R1, R2)
    // and the extension may be due, until it is (8 of 170 runs here): about 500 runs read in all
    // against 1,700 when every run read the escalation rule's 10, and 12,000 with the whole history.
    expect(longAt.length).toBeGreaterThanOrEqual(4);
    expect(longAt.length).toBeLessThanOrEqual(10);
    expect(steady.runsRead).toBeLessThan(whole.runsRead / 10);
  });

  it('a chamber of one recipe reads its whole history only where Phase I completes and where the extension is fitted, alarms or not', () => {
    const rand = seededRandom(31);
    const extending = { ...doc, monitor: { baseline: { minRuns: 30, extendTo: 50 }, mewma: false } };
    const { steady, longAt, step } = wholeAndSteady();
    // Alarmed runs are no usable runs for the extension: each one moves its due run one later.
    const faults = new Set([35, 41, 42, 60]);
    const refits: number[] = [];
    const version = () => steady.model('R1')?.version ?? 0;
    for (let i = 0; i < 90; i++) {
      const before = version();
      step(i, run(i, rand, faults.has(i) ? { pressureStep: 3 } : undefined), 'R1', extending);
      if (before === 1 && version() === 2) refits.push(i);
    }
    expect(steady.modelVersions().map((m) => m.version)).toEqual([1, 2]);
    // Phase I completes at run 29, the extension is fitted on 50 unalarmed runs: no check before it.
    expect(refits[0]).toBeGreaterThan(29 + 20);
    expect(longAt).toEqual([29, refits[0]]);
  });

  it('a chamber whose judged runs keep alarming reads its whole history only where a check of the extension is due, judging every run as with it', () => {
    const rand = seededRandom(29);
    const extending = { ...doc, monitor: { baseline: { minRuns: 30, extendTo: 60 }, mewma: false } };
    const { steady, longAt, step } = wholeAndSteady();
    // After Phase I, two runs of three carry a fault that alarms: the usable runs grow by one in three
    // judged runs, too slowly for 60 of them to fit in the history a run may read.
    for (let i = 0; i < 150; i++) {
      const trace = run(i, rand, i >= 30 && i % 3 !== 0 ? { pressureStep: 3 } : undefined);
      step(i, trace, 'R1', extending);
    }
    // Too few runs without an alarm in the history a run may read: the model is never extended.
    expect(steady.modelVersions().map((m) => m.version)).toEqual([1]);
    // From run 60 on (30 judged runs) the count of judged runs alone says the extension may be due: it
    // read the whole history on each of those 90 runs; the bound each check stores leaves a few.
    expect(longAt.filter((i) => i >= 60).length).toBeGreaterThan(0);
    expect(longAt.filter((i) => i >= 60).length).toBeLessThanOrEqual(10);
  });

  it('converts a model an earlier release stored in limit-set parts on first use: read whole, judged with, stored as a record; a missing part is refused', () => {
    const rand = seededRandom(31);
    const wide = (i: number) => {
      const svids: Record<string, number[]> = {};
      const offset = normalDeviate(rand);
      for (let k = 0; k < 64; k++) svids[`S${String(k).padStart(2, '0')}`] = Array.from({ length: 40 }, () => 100 + k + offset + normalDeviate(rand));
      return traceOf(`run-${i}`, svids);
    };
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 30; i++) chamber.process(wide(i), 'R1', doc);
    const fitted = chamber.model('R1');
    expect(fitted).toMatchObject({ version: 1, reason: 'initial', runId: 'run-29' });
    // The model as an earlier release stored it: in limit-set parts (head last), no record.
    chamber.modelsAsLimitSets();
    const sets = chamber.limits;
    expect(sets.length).toBeGreaterThan(2);
    const head = sets.find((l) => l.indicatorKey === 'R1|m:model')!;
    expect(head).toMatchObject({ chartType: MONITOR_CHART_TYPE, version: 1, params: { parts: sets.length - 1 } });
    expect(sets.filter((l) => l !== head).map((l) => [l.chartType, l.version])).toEqual(sets.slice(0, -1).map(() => [MONITOR_PART_CHART_TYPE, 1]));
    for (const l of sets) expect(JSON.stringify(l.params).length).toBeLessThan(1 << 20);
    expect(chamber.modelVersions()).toEqual([]);

    // Its first run is judged with it and stores it as the recipe's record (`converted`); the next one reads the record.
    const judged = chamber.process(wide(30), 'R1', doc).evaluation;
    expect(judged.skipped).toEqual([]);
    expect(judged.points.find((p) => p.indicatorKey === 'R1|m:model')?.limitsVersion).toBe(1);
    expect(judged.monitorModel).toMatchObject({ version: 1, reason: 'converted', createdAt: head.createdAt });
    expect(chamber.model('R1')?.model).toEqual(fitted?.model);
    const next = chamber.process(wide(31), 'R1', doc);
    expect(next.input.monitorModel).toMatchObject({ version: 1, reason: 'converted' });
    expect(next.evaluation.monitorModel).toBeUndefined();

    // Parts that do not add up to the head's model (decoded models are remembered by their digest, so
    // a head with another digest is read anew): the model cannot be read, and the run says so.
    const input = { ...next.input, monitorModel: undefined };
    const otherHead = (limits: typeof input.limits) => limits.map((l) => (l.indicatorKey === 'R1|m:model' ? { ...l, params: { ...l.params, digest: '0123456789abcdef' } } : l));
    const unreadable = (limits: typeof input.limits) => createRunEvaluator().evaluate({ ...input, limits, historyLimit: undefined }).skipped;
    expect(unreadable(otherHead(input.limits))).toContainEqual({ indicatorKey: 'R1|m:model', reason: 'unreadable-limits: the parts of model v1 do not match its digest' });
    expect(unreadable(otherHead(input.limits.filter((l) => l.indicatorKey !== 'R1|m:model/part2')))).toContainEqual({
      indicatorKey: 'R1|m:model',
      reason: `unreadable-limits: part 2 of ${sets.length - 1} of model v1 is missing`,
    });
    // A re-baseline replaces the model, not its parts one by one: one request, after the record's version.
    expect(rebaselineRecords(chamber.chamber, chamber.limits, { reason: 'PM', requestedBy: 'alice', excludeRunIds: [] }, new Date(0), chamber.modelVersions()).map((r) => [r.indicatorKey, r.version])).toEqual([['R1|m:model', 2]]);
  });

  it('lists at most 100 violations of a run, the worst first, and counts every one by rule', () => {
    const rand = seededRandom(41);
    const wide = (i: number, shift = 0) => {
      const svids: Record<string, number[]> = {};
      for (let k = 0; k < 40; k++) svids[`S${String(k).padStart(2, '0')}`] = Array.from({ length: 40 }, () => 100 + k + shift * (k + 1) + normalDeviate(rand));
      return traceOf(`run-${i}`, svids);
    };
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 30; i++) chamber.process(wide(i), 'R1', doc);
    const alarm = chamber.process(wide(30, 20), 'R1', doc).evaluation.alarms[0];
    const details = alarm?.details as { violationCount: number; byRule: Record<string, number>; violations: { rule: string; value: number; ucl?: number; center?: number }[] };
    expect(details.violationCount).toBeGreaterThan(100);
    expect(Object.values(details.byRule).reduce((a, b) => a + b, 0)).toBe(details.violationCount);
    expect(details.violations).toHaveLength(100);
    expect(alarm?.message).toMatch(/; and \d+ more$|…$/);
    // Within a rule, the furthest beyond its limit first.
    const limits = details.violations.filter((v) => v.rule === 'LIMIT').map((v) => Math.abs(v.value - v.center!) / (v.ucl! - v.center!));
    expect(limits).toEqual([...limits].sort((a, b) => b - a));
    expect(JSON.stringify(details).length).toBeLessThan(200_000);
  });

  it('keeps recipes apart: each recipe has its own Phase I and model', () => {
    const rand = seededRandom(12);
    const chamber = new SimulatedChamber(createRunEvaluator());
    let models = 0;
    for (let i = 0; i < 60; i++) {
      const r = chamber.process(run(i, rand), i % 2 === 0 ? 'A' : 'B', doc);
      if (r.evaluation.monitorModel) models++;
    }
    expect(models).toBe(2);
    expect(chamber.modelVersions().map((m) => [m.recipe, m.version])).toEqual([
      ['A', 1],
      ['B', 1],
    ]);
  });

  it('re-baselines on request: a new Phase I after it, excluded runs left out, the new version replaces the old', () => {
    const rand = seededRandom(13);
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 32; i++) chamber.process(run(i, rand), 'R1', doc);
    expect(chamber.limits).toEqual([]);
    expect(chamber.modelVersions().map((m) => [m.recipe, m.version])).toEqual([['R1', 1]]);
    const requests = rebaselineRecords(
      chamber.chamber,
      chamber.limits,
      { reason: 'chamber wet clean', requestedBy: 'alice', excludeRunIds: ['run-33'], minRuns: 12 },
      new Date(0),
      chamber.modelVersions(),
    );
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ indicatorKey: 'R1|m:model', version: 2, chartType: PENDING_BASELINE_CHART_TYPE });
    for (const r of requests) chamber.putLimitSet(r);
    // Already pending: asking again adds nothing.
    expect(rebaselineRecords(chamber.chamber, chamber.limits, { reason: 'x', requestedBy: 'bob', excludeRunIds: [] }, new Date(0), chamber.modelVersions())).toEqual([]);

    const after = Array.from({ length: 13 }, (_, k) => chamber.process(run(32 + k, rand, k === 1 ? { pressureStep: 50 } : undefined), 'R1', doc));
    // Phase I again: no judgement, no alarm (not even on the excluded, faulty run-33).
    expect(after.slice(0, 12).every((p) => p.evaluation.alarms.length === 0 && p.evaluation.monitorModel === undefined)).toBe(true);
    const v2 = after[12]?.evaluation.monitorModel;
    expect(v2).toMatchObject({ version: 2, reason: 'manual', excludedRunIds: ['run-33'] });
    const runIds = v2?.model['baselineRunIds'] as string[];
    expect(runIds).toHaveLength(12);
    expect(runIds).not.toContain('run-33');
    expect(runIds[0]).toBe('run-32');
    // The new version judges from then on; the request stays in the limit sets as its audit.
    expect(chamber.process(run(45, rand), 'R1', doc).input.monitorModel?.version).toBe(2);
  });

  it('re-baselines legacy charts the same way', () => {
    const rand = seededRandom(14);
    const chamber = new SimulatedChamber(createRunEvaluator());
    const legacy = { schemaVersion: 1, name: 'l', indicators: [{ id: 'mean', svid: 'Pressure', statistic: 'mean' }], escalation: [] };
    for (let i = 0; i < 21; i++) chamber.process(run(i, rand), 'R1', legacy);
    expect(chamber.limits.map((l) => [l.indicatorKey, l.version])).toEqual([['R1|mean', 1]]);
    for (const r of rebaselineRecords(chamber.chamber, chamber.limits, { reason: 'PM', requestedBy: 'alice', excludeRunIds: [], minRuns: 5 }, new Date(0)))
      chamber.putLimitSet(r);
    // Legacy charts freeze limits from committed runs only: the 6th run after the request gets them.
    const after = Array.from({ length: 6 }, (_, k) => chamber.process(run(21 + k, rand), 'R1', legacy));
    expect(after.slice(0, 5).every((p) => p.evaluation.newLimitSets.length === 0 && p.evaluation.alarms.length === 0)).toBe(true);
    expect(after[5]?.evaluation.newLimitSets[0]).toMatchObject({ indicatorKey: 'R1|mean', version: 2, chartType: 'individuals' });
    expect(after[5]?.evaluation.newLimitSets[0]?.baseline).toMatchObject({ reason: 'manual', runIds: ['run-21', 'run-22', 'run-23', 'run-24', 'run-25'] });
  });
});
