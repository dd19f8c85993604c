/**
 * The monitor's memory as a state record: stepping the stored state from run to run judges every run
 * exactly as rebuilding the memory from the history does, and a chamber written by the earlier
 * release (its memory in the model point's chart fields and in level points, no state) is converted
 * on its first run.
 */
import fc from 'fast-check';
import type { MonitorState, RunPointSet, UChartPoint } from '@defender/contracts';
import { DEFAULT_STRATEGY_DOCUMENT } from '@defender/defense-rules';
import { normalDeviate, seededRandom } from '@defender/hashing';
import type { RunEvaluation } from '../ports';
import { MonitorStateMissingError } from './errors';
import { POINT_FLAGS } from './flags';
import { legacyLevelKey, MONITOR_COUNT_KEYS } from './monitor-memory';
import { createRunEvaluator } from './run-evaluator';
import { SimulatedChamber, traceOf } from './testing/harness';

const STEPS = [
  { name: 'Ramp', startIndex: 0 },
  { name: 'Main', startIndex: 10 },
];

/** Two correlated sensors with a slow drift, a setpoint, and a pressure fault on the runs asked. */
function run(i: number, rand: () => number, fault: boolean) {
  const offset = normalDeviate(rand);
  const pressure: number[] = [];
  const flow: number[] = [];
  for (let t = 0; t < 30; t++) {
    const main = t >= 10;
    pressure.push((main ? 40 : 10 + t) + 0.01 * i + offset + 0.2 * normalDeviate(rand) + (main && fault ? 4 : 0));
    flow.push((main ? 200 : 100) + 0.05 * i + 5 * offset + normalDeviate(rand));
  }
  return traceOf(`run-${i}`, { Pressure: pressure, Flow: flow, SP_001: Array.from({ length: 30 }, (_, t) => (t >= 10 ? 500 : 0)) }, { steps: STEPS });
}

/**
 * A committed run as the earlier release stored it: the memory the run left (`state`) in the chart
 * of the model's point (Phase I and judged-run counts, the extension bound, the MEWMA vector `z<a>`)
 * and in one level point per SVID (`<recipe>|m/<svid>@*:offset`), written before the model's point.
 */
function asEarlierRelease(set: RunPointSet, state: MonitorState | undefined): RunPointSet {
  if (!state || set.recipe === undefined) return set;
  const modelKey = `${set.recipe}|m:model`;
  const model = set.points.find((p) => p.indicatorKey === modelKey);
  if (!model) return set;
  const others = set.points.filter((p) => p !== model);
  const earlierModel = { ...model, flags: model.flags & ~POINT_FLAGS.MEMORY_IN_STATE };
  if (state.phase === 'collecting') return { ...set, points: [...others, { ...earlierModel, chart: { [MONITOR_COUNT_KEYS.phaseOneRuns]: state.runs } }] };
  const chart: Record<string, number> = { ...model.chart, [MONITOR_COUNT_KEYS.judgedRuns]: state.judgedRuns };
  if (state.extensionCheckAt !== null) chart[MONITOR_COUNT_KEYS.extensionCheckAt] = state.extensionCheckAt;
  state.mewma?.forEach((z, a) => (chart[`z${a}`] = z));
  const levels: UChartPoint[] = Object.entries(state.levelOffsets).map(([svid, value]) => ({
    indicatorKey: `${set.recipe}|${legacyLevelKey(svid)}`,
    value,
    limitsVersion: state.modelVersion,
    flags: earlierModel.flags,
  }));
  return { ...set, points: [...others, ...levels, { ...earlierModel, chart }] };
}

/** An evaluation without the chamber's memory (a rebuild from history starts it from the escalation rule's runs: chamber-memory.spec.ts). */
function withoutChamberMemory(e: RunEvaluation): Omit<RunEvaluation, 'chamberMemory'> {
  const { chamberMemory: _memory, ...rest } = e;
  return rest;
}

/** Processes the runs with the stored state, and judges each one again from the earlier release's history alone. */
function stepAndRebuild(runs: number, seed: number, faultAt: ReadonlySet<number>, strategy: unknown, recipes: readonly string[]) {
  const rand = seededRandom(seed);
  const evaluator = createRunEvaluator();
  const chamber = new SimulatedChamber(evaluator);
  const earlier: RunPointSet[] = [];
  const mismatches: number[] = [];
  for (let i = 0; i < runs; i++) {
    const recipe = recipes[i % recipes.length] as string;
    const r = chamber.process(run(i, rand, faultAt.has(i)), recipe, strategy);
    const { historyLimit: _limit, monitorState: _state, chamberMemory: _memory, ...input } = r.input;
    const rebuilt = evaluator.evaluate({ ...input, history: earlier });
    if (JSON.stringify(withoutChamberMemory(rebuilt)) !== JSON.stringify(withoutChamberMemory(r.evaluation))) mismatches.push(i);
    earlier.push(asEarlierRelease(chamber.committed.at(-1) as RunPointSet, r.deadLettered ? undefined : r.evaluation.monitorState));
  }
  return { chamber, mismatches };
}

describe('chamber monitor state', () => {
  const strategy = { ...DEFAULT_STRATEGY_DOCUMENT, monitor: { baseline: { minRuns: 12, extendTo: 24 }, mewma: { lambda: 0.3 } } };

  it('stepping the state judges every run as rebuilding its memory from the history does (Phase I, fit, judged runs, alarms, extension)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.uniqueArray(fc.integer({ min: 12, max: 44 }), { maxLength: 6 }), (seed, faults) => {
        const { chamber, mismatches } = stepAndRebuild(45, seed, new Set(faults), strategy, ['R1']);
        expect(mismatches).toEqual([]);
        expect(chamber.monitorState('R1')?.phase).toBe('judging');
      }),
      { numRuns: 4 },
    );
  });

  it('keeps one state per recipe, each stepped on its own runs', () => {
    const { chamber, mismatches } = stepAndRebuild(60, 7, new Set([40, 41]), strategy, ['A', 'B', 'A']);
    expect(mismatches).toEqual([]);
    // A ran 40 times: judged since its 12th run, extended once 24 unalarmed runs existed; B ran 20 times.
    expect(chamber.monitorState('A')).toMatchObject({ phase: 'judging', modelVersion: 2 });
    expect(chamber.monitorState('B')).toMatchObject({ phase: 'judging', modelVersion: 1, judgedRuns: 20 - 12 + 1 });
  });

  it('converts a chamber the earlier release wrote on its first run: the state it commits is the one stepping gives', () => {
    const rand = seededRandom(99);
    const evaluator = createRunEvaluator();
    const chamber = new SimulatedChamber(evaluator);
    const earlier: RunPointSet[] = [];
    for (let i = 0; i < 30; i++) {
      const r = chamber.process(run(i, rand, i === 20), 'R1', strategy);
      earlier.push(asEarlierRelease(chamber.committed.at(-1) as RunPointSet, r.evaluation.monitorState));
    }
    const stepped = chamber.process(run(30, rand, false), 'R1', strategy);
    const { historyLimit: _limit, monitorState: _state, chamberMemory: _memory, ...input } = stepped.input;
    // No state stored: the run reads the earlier release's memory from its history and returns it as a state.
    const converted = evaluator.evaluate({ ...input, history: earlier });
    expect(converted.monitorState).toEqual(stepped.evaluation.monitorState);
    expect(withoutChamberMemory(converted)).toEqual(withoutChamberMemory(stepped.evaluation));
    // Without that history it could not know the memory: a fresh MEWMA and centre, another state.
    expect(evaluator.evaluate({ ...input, history: [] }).monitorState).not.toEqual(stepped.evaluation.monitorState);
    // A history whose newest run of the recipe kept its memory in a state: without the state, no judgement.
    expect(() => evaluator.evaluate({ ...input, history: chamber.committed.slice(0, -1) })).toThrow(MonitorStateMissingError);
  });
});
