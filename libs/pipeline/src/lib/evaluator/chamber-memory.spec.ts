/**
 * The chamber's memory of its runs' alarms (contracts `ChamberMemory`): stepping it from run to run
 * judges every run — points, alarms, holds — exactly as counting the alarmed runs of the history does,
 * it always holds the alarm flags of the newest committed judged runs, and with it a judged run of the
 * default strategy reads no history.
 */
import fc from 'fast-check';
import { CHAMBER_MEMORY_LIMITS, type RunPointSet } from '@defender/contracts';
import { DEFAULT_STRATEGY_DOCUMENT, WESTERN_ELECTRIC_STRATEGY_DOCUMENT } from '@defender/defense-rules';
import { normalDeviate, seededRandom } from '@defender/hashing';
import { POINT_FLAGS } from './flags';
import { createRunEvaluator } from './run-evaluator';
import { SimulatedChamber, traceOf } from './testing/harness';

const STEPS = [
  { name: 'Stabilise', startIndex: 0 },
  { name: 'Etch', startIndex: 8 },
];

/** Three sensors (two that move together), a fault on the throttle valve when asked; `blank`: every sample missing. */
function run(i: number, rand: () => number, fault: boolean, blank: boolean) {
  const common = normalDeviate(rand);
  const rf: number[] = [];
  const valve: number[] = [];
  const temp: number[] = [];
  for (let t = 0; t < 24; t++) {
    const etch = t >= 8;
    rf.push(blank ? NaN : (etch ? 300 : 50) + 2 * common + normalDeviate(rand));
    valve.push(blank ? NaN : (etch ? 35 : 20) + common + 0.3 * normalDeviate(rand) + (etch && fault ? 5 : 0));
    temp.push(blank ? NaN : 60 + 0.02 * i + 0.2 * normalDeviate(rand));
  }
  return traceOf(`run-${i}`, { RF: rf, Valve: valve, Temp: temp }, { steps: STEPS });
}

/** The alarm flags of the committed runs with points (the chamber's judged runs), oldest first. */
function alarmFlags(committed: readonly RunPointSet[]): boolean[] {
  return committed.filter((s) => s.points.length > 0).map((s) => s.points.some((p) => (p.flags & POINT_FLAGS.RUN_ALARMED) !== 0));
}

/** The same runs through a chamber that keeps its memory and one that counts its history. */
function bothWays(runs: number, seed: number, faults: ReadonlySet<number>, blanks: ReadonlySet<number>, strategy: unknown) {
  const rand = seededRandom(seed);
  const remembering = new SimulatedChamber(createRunEvaluator());
  const counting = new SimulatedChamber(createRunEvaluator());
  counting.rememberAlarms = false;
  const mismatches: number[] = [];
  const memoryMismatches: number[] = [];
  let holds = 0;
  for (let i = 0; i < runs; i++) {
    const trace = run(i, rand, faults.has(i), blanks.has(i));
    const a = remembering.process(trace, 'R1', strategy);
    const b = counting.process(trace, 'R1', strategy);
    const { chamberMemory: memory, ...judged } = a.evaluation;
    const { chamberMemory: _rebuilt, ...counted } = b.evaluation;
    if (JSON.stringify(judged) !== JSON.stringify(counted)) mismatches.push(i);
    if (a.evaluation.hold) holds++;
    if (!a.deadLettered) {
      const flags = alarmFlags(remembering.committed);
      const expected = flags.slice(-CHAMBER_MEMORY_LIMITS.recentAlarms);
      if (JSON.stringify(memory) !== JSON.stringify({ recentAlarms: expected, fromFirstRun: flags.length === expected.length })) memoryMismatches.push(i);
    }
  }
  return { remembering, counting, mismatches, memoryMismatches, holds };
}

describe('chamber memory in the run evaluator', () => {
  const monitor = { ...DEFAULT_STRATEGY_DOCUMENT, monitor: { baseline: { minRuns: 12, extendTo: false } } };

  it('stepping the memory judges every run as counting the alarmed runs of the history does, and holds the newest judged runs\' flags', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        // Faults in bursts, so that escalation (3 alarmed runs within 5) holds the chamber now and then.
        fc.uniqueArray(fc.integer({ min: 12, max: 76 }), { minLength: 2, maxLength: 8 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 79 }), { maxLength: 2 }),
        (seed, starts, blanks) => {
          const faults = new Set(starts.flatMap((s) => [s, s + 1, s + 2]));
          const { mismatches, memoryMismatches } = bothWays(80, seed, faults, new Set(blanks), monitor);
          expect(mismatches).toEqual([]);
          // After a dead letter (a blank run) the memory starts again from the escalation rule's runs.
          if (blanks.length === 0) expect(memoryMismatches).toEqual([]);
        },
      ),
      { numRuns: 3 },
    );
  });

  it('remembers past its limit (64 runs), forgetting the oldest; holds where escalation says so', () => {
    const faults = new Set([20, 21, 22, 23, 50, 51, 52, 70, 71, 72]);
    const { remembering, mismatches, memoryMismatches, holds } = bothWays(80, 5, faults, new Set(), monitor);
    expect(mismatches).toEqual([]);
    expect(memoryMismatches).toEqual([]);
    expect(holds).toBeGreaterThan(0);
    expect(alarmFlags(remembering.committed)).toHaveLength(80);
  });

  it('with its memory a judged run of the default strategy reads no history; the legacy rules read their charts\' windows', () => {
    const rand = seededRandom(3);
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 30; i++) chamber.process(run(i, rand, false, false), 'R1', monitor);
    const before = chamber.runsRead;
    for (let i = 30; i < 40; i++) expect(chamber.process(run(i, rand, i === 35, false), 'R1', monitor).input.history).toEqual([]);
    expect(chamber.runsRead).toBe(before);

    // Western Electric reads 8 points back (and 5 runs for dead letters among them); its escalation
    // (2 within 5) comes from the memory, or from those runs.
    const evaluator = createRunEvaluator();
    const memory = { recentAlarms: [true, false, false, true], fromFirstRun: false };
    expect(evaluator.historyRuns(WESTERN_ELECTRIC_STRATEGY_DOCUMENT, undefined, memory)).toBe(8 + 5);
    expect(evaluator.historyRuns(monitor, undefined, memory)).toBe(0);
    expect(evaluator.historyRuns(monitor, undefined, { ...memory, recentAlarms: [true] })).toBe(5 + 5);
    expect(evaluator.historyRuns(monitor)).toBe(5 + 5);
  });

  it('an escalation window longer than the memory holds counts the history, with the same verdicts', () => {
    const long = { ...monitor, escalation: [{ alarms: 3, withinRuns: CHAMBER_MEMORY_LIMITS.recentAlarms + 6, action: 'HOLD_CHAMBER' }] };
    const { remembering, mismatches } = bothWays(80, 9, new Set([15, 40, 75, 76]), new Set(), long);
    expect(mismatches).toEqual([]);
    // Past 64 judged runs the memory no longer covers the window: the run reads the history.
    const evaluator = createRunEvaluator();
    expect(evaluator.historyRuns(long, undefined, { recentAlarms: [], fromFirstRun: true })).toBe(0);
    expect(evaluator.historyRuns(long, undefined, { recentAlarms: Array.from({ length: 64 }, () => false), fromFirstRun: false })).toBeGreaterThanOrEqual(70);
    expect(remembering.committed).toHaveLength(80);
  });
});
