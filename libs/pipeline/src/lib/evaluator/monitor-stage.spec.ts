/**
 * The chamber monitor through the production evaluator, with every record round-tripped through JSON
 * as the store would (testing/harness): Phase I, the model as a limit set, one run-level alarm listing
 * every violation, escalation to a hold, and what the store accepts.
 */
import { MONITOR_STRATEGY_DOCUMENT } from '@defender/defense-rules';
import { describeFlags, POINT_FLAGS } from './flags';
import { MONITOR_CHART_TYPE } from './monitor-stage';
import { createRunEvaluator } from './run-evaluator';
import { mulberry32, normal, SimulatedChamber, traceOf } from './testing/harness';

const STEPS = [
  { name: 'Ramp', startIndex: 0 },
  { name: 'Main', startIndex: 20 },
];

/** A run of two correlated sensors and a setpoint: a run offset shared by both, per-sample noise. */
function run(i: number, rand: () => number, fault?: { readonly pressureStep?: number; readonly setpoint?: number }) {
  const offset = normal(rand);
  const pressure: number[] = [];
  const flow: number[] = [];
  const setpoint: number[] = [];
  for (let t = 0; t < 60; t++) {
    const main = t >= 20;
    pressure.push((main ? 40 : 10 + t) + offset + 0.2 * normal(rand) + (main && fault?.pressureStep ? fault.pressureStep : 0));
    flow.push((main ? 200 : 100) + 5 * offset + normal(rand));
    setpoint.push(main ? (fault?.setpoint ?? 500) : 0);
  }
  return traceOf(`run-${i}`, { Pressure: pressure, Flow: flow, SP_001: setpoint }, { steps: STEPS });
}

describe('chamber monitor in the run evaluator', () => {
  const doc = { ...MONITOR_STRATEGY_DOCUMENT, monitor: { baseline: { minRuns: 30 }, mewma: false } };

  it('collects Phase I, stores the model once, then judges each run with at most one alarm', () => {
    const rand = mulberry32(11);
    const chamber = new SimulatedChamber(createRunEvaluator());
    const phase = Array.from({ length: 30 }, (_, i) => chamber.process(run(i, rand), 'R1', doc));
    expect(phase.slice(0, 29).every((p) => p.evaluation.alarms.length === 0 && p.evaluation.newLimitSets.length === 0)).toBe(true);
    const last = phase[29]?.evaluation;
    expect(last?.newLimitSets).toHaveLength(1);
    const model = last?.newLimitSets[0];
    expect(model?.chartType).toBe(MONITOR_CHART_TYPE);
    expect(model?.indicatorKey).toBe('R1|m:model');
    expect(model?.baseline.runIds).toHaveLength(30);
    const params = model?.params['model'] as { variables: string[]; notCharted: { key: string; reason: string }[] };
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
    // Constant windows are checked through their min and max (equal to the constant: every statistic kept).
    expect(details.violations.filter((v) => v.rule === 'CONSTANT').map((v) => v.indicatorKey).sort()).toEqual([
      'R1|m/SP_001@Main:max',
      'R1|m/SP_001@Main:min',
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

  it('keeps recipes apart: each recipe has its own Phase I and model', () => {
    const rand = mulberry32(12);
    const chamber = new SimulatedChamber(createRunEvaluator());
    let models = 0;
    for (let i = 0; i < 60; i++) {
      const r = chamber.process(run(i, rand), i % 2 === 0 ? 'A' : 'B', doc);
      models += r.evaluation.newLimitSets.length;
    }
    expect(models).toBe(2);
    expect(chamber.limits.map((l) => l.indicatorKey).sort()).toEqual(['A|m:model', 'B|m:model']);
  });
});
