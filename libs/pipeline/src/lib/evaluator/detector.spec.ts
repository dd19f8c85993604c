/**
 * The strategy's detectors as pure steps and the run evaluator as their dispatcher: a strategy with
 * legacy indicators and the monitor, each detector stepped on its own, gives what the evaluator
 * returns for the run.
 */
import { chamberKey } from '@defender/contracts';
import { DEFAULT_STRATEGY_DOCUMENT, resolveStrategy, validateStrategy } from '@defender/defense-rules';
import { normalDeviate, seededRandom } from '@defender/hashing';
import { createTrace, IndicatorCalculator } from '@defender/uchart';
import { needsOlderRuns, type DetectorInput, type OlderRunsNeeded } from './detector';
import { needsMoreHistory } from '../ports';
import { POINT_FLAGS } from './flags';
import { MonitorDetector } from './monitor-detector';
import { createRunEvaluator } from './run-evaluator';
import { rulesDetector } from './rules-detector';
import { SimulatedChamber, traceOf } from './testing/harness';

function run(i: number, rand: () => number, fault = false) {
  const offset = normalDeviate(rand);
  const pressure = Array.from({ length: 40 }, (_, t) => 40 + offset + 0.2 * normalDeviate(rand) + (fault && t > 10 ? 5 : 0));
  const flow = Array.from({ length: 40 }, () => 200 + 5 * offset + normalDeviate(rand));
  return traceOf(`run-${i}`, { Pressure: pressure, Flow: flow });
}

/** A detector's verdict, failing the test when it asked for older runs instead. */
function verdict<V>(answer: V | OlderRunsNeeded): V {
  if (needsOlderRuns(answer)) throw new Error(`asked for older runs: ${answer.reason}`);
  return answer;
}

describe('detectors and their dispatcher', () => {
  const doc = {
    ...DEFAULT_STRATEGY_DOCUMENT,
    indicators: [{ id: 'p-mean', svid: 'Pressure', statistic: 'mean' }],
    monitor: { baseline: { minRuns: 12 }, mewma: { lambda: 0.3 } },
  };

  it('the evaluator returns its detectors\' verdicts combined: both sets of points with the run\'s flags, both detectors\' limit sets, the monitor\'s state', () => {
    const rand = seededRandom(3);
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 25; i++) chamber.process(run(i, rand), 'R1', doc);
    const r = chamber.process(run(25, rand, true), 'R1', doc);
    const validated = validateStrategy(doc);
    if (!validated.ok) throw new Error('invalid test strategy');
    const strategy = resolveStrategy([validated.strategy], { chamber: chamberKey(chamber.chamber), recipe: 'R1' });
    const { trace: record } = r.input;
    const input: DetectorInput = {
      run: { chamber: chamber.chamber, sequence: r.sequence, runId: record.runId, recipe: 'R1' },
      strategy,
      trace: createTrace({ runId: record.runId, timing: record.timing, svids: record.svids, steps: record.steps }),
      calculator: new IndicatorCalculator(),
      history: r.input.history,
      limits: r.input.limits,
      monitorState: r.input.monitorState,
      monitorModel: r.input.monitorModel,
      recentAlarms: r.input.chamberMemory?.recentAlarms,
      historyLean: false,
      now: r.input.now,
      historyLimited: false,
    };
    const rules = verdict(rulesDetector.step(input));
    const monitorDetector = new MonitorDetector();
    const monitor = verdict(monitorDetector.step(input));
    // A pure step: the same input, the same verdict.
    expect(monitorDetector.step(input)).toEqual(monitor);
    // Its memo of decoded models changes nothing: a new detector gives the same verdict.
    expect(new MonitorDetector().step(input)).toEqual(monitor);
    expect(rules.alarmed || monitor.alarmed).toBe(true);
    const runFlags = POINT_FLAGS.RUN_ALARMED | (r.evaluation.hold ? POINT_FLAGS.RUN_HOLD : 0);
    expect(r.evaluation.points).toEqual([...rules.points, ...monitor.points].map((p) => ({ ...p, flags: p.flags | runFlags })));
    expect(r.evaluation.monitorState).toEqual(monitor.state);
    expect(r.evaluation.skipped).toEqual([...rules.skipped, ...monitor.skipped]);
    // Each detector's points carry only what it judged: the rules their indicator, the monitor its own.
    expect(rules.points.map((p) => p.indicatorKey)).toEqual(['R1|p-mean']);
    expect(monitor.points.every((p) => p.indicatorKey.startsWith('R1|m'))).toBe(true);
  });

  it('the monitor detector refuses a strategy without a monitor', () => {
    const validated = validateStrategy({ schemaVersion: 1, name: 'rules only', indicators: [{ id: 'p', svid: 'Pressure', statistic: 'mean' }], escalation: [] });
    if (!validated.ok) throw new Error('invalid test strategy');
    const strategy = resolveStrategy([validated.strategy], { chamber: 'T:C', recipe: 'R' });
    expect(() => new MonitorDetector().step({ strategy } as DetectorInput)).toThrow(/no monitor/);
  });

  it('a run that may need older runs than the history read is answered, not thrown: nothing judged, the full history asked for', () => {
    const rand = seededRandom(5);
    const evaluator = createRunEvaluator();
    const chamber = new SimulatedChamber(evaluator);
    // Phase I of 12 runs: the 12th completes it and fits the model on the runs before it.
    for (let i = 0; i < 11; i++) chamber.process(run(i, rand), 'R1', doc);
    const r = chamber.process(run(11, rand), 'R1', doc);
    const { historyLimit: _limit, ...whole } = r.input;
    // The newest 5 runs: enough for the rules (escalation reads 4), not for the monitor's fit (11 earlier runs).
    const read = whole.history.slice(-5);
    const full = evaluator.fullHistoryRuns(doc);
    const answer = evaluator.evaluate({ ...whole, history: read, historyLimit: 5 });
    expect(answer).toEqual({ kind: 'more-history', runs: full, reason: expect.stringMatching(/Phase I/) });
    expect(needsMoreHistory(answer)).toBe(true);
    // Given every run (no limit), the run is judged, as the harness's second read judged it.
    const judged = evaluator.evaluate({ ...whole });
    expect(needsMoreHistory(judged)).toBe(false);
    expect(judged).toEqual(r.evaluation);
  });
});
