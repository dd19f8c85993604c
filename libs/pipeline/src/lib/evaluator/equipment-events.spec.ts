import type { EquipmentEvent, MonitorState } from '@defender/contracts';
import { DEFAULT_EVENT_ACTIONS, DEFAULT_STRATEGY_DOCUMENT, parseStrategy, type MonitorConfig } from '@defender/defense-rules';
import { normalDeviate, seededRandom } from '@defender/hashing';
import { eventActionFor, monitorStateAfterEvent } from './equipment-events';
import { createRunEvaluator } from './run-evaluator';
import { SimulatedChamber, traceOf } from './testing/harness';

const event = (kind: EquipmentEvent['kind'], over: Partial<EquipmentEvent> = {}): EquipmentEvent =>
  ({ schema: 1, toolId: 'ETCH01', chamberId: 'PM2', eventId: `${kind}-1`, kind, at: '2026-12-08T00:00:00.000Z', ...over }) as EquipmentEvent;
const judging: MonitorState = { phase: 'judging', modelVersion: 2, judgedRuns: 40, extensionCheckAt: 51, mewma: [0.5, -2], levelOffsets: { P: 0.3 } };

describe('what an equipment event does to a recipe state (pure step)', () => {
  const cfg = parseStrategy({ schemaVersion: 1, name: 't', monitor: { events: { seasoning: 'none' } } }).monitor as MonitorConfig;

  it("takes the strategy's action per kind (the defaults fill the kinds it leaves out); a named recipe's event leaves the others", () => {
    expect(cfg.events).toEqual({ ...DEFAULT_EVENT_ACTIONS, seasoning: 'none' });
    expect(eventActionFor(cfg, event('pm'), 'R1')).toBe('recentre');
    expect(eventActionFor(cfg, event('long-idle', { idleSeconds: 86_400 }), 'R1')).toBe('recentre');
    expect(eventActionFor(cfg, event('seasoning'), 'R9')).toBe('none');
    expect(eventActionFor(cfg, event('seasoning'), 'R1')).toBe('none');
    expect(eventActionFor(cfg, event('recipe-change', { recipe: 'R2' }), 'R1')).toBe('none');
    expect(eventActionFor(cfg, event('recipe-change', { recipe: 'R2' }), 'R2')).toBe('rebaseline');
    expect(() => parseStrategy({ schemaVersion: 1, name: 't', monitor: { events: { pm: 'ignore' } } })).toThrow(/events/);
    expect(() => parseStrategy({ schemaVersion: 1, name: 't', monitor: { events: { lunch: 'none' } } })).toThrow(/events/);
  });

  it('reset-memory zeroes the MEWMA; recentre also learns the centre again; rebaseline starts Phase I of the next version after the event; none changes nothing', () => {
    expect(monitorStateAfterEvent(judging, 'reset-memory', 90)).toEqual({ ...judging, mewma: [0, 0] });
    expect(monitorStateAfterEvent(judging, 'recentre', 90)).toEqual({ ...judging, mewma: [0, 0], levelOffsets: {}, recentre: { runs: 0, seen: 0 } });
    // A recipe still in its first Phase I cannot be re-centred: its Phase I starts again after the event.
    expect(monitorStateAfterEvent({ phase: 'collecting', modelVersion: 1, runs: 12 }, 'recentre', 14)).toEqual({ phase: 'collecting', modelVersion: 1, runs: 0, since: 14 });
    expect(monitorStateAfterEvent({ ...judging, mewma: null }, 'reset-memory', 90)).toBeUndefined();
    expect(monitorStateAfterEvent(judging, 'rebaseline', 90)).toEqual({ phase: 'collecting', modelVersion: 3, runs: 0, since: 90 });
    // Still collecting its first Phase I: the same version, counting again after the event.
    expect(monitorStateAfterEvent({ phase: 'collecting', modelVersion: 1, runs: 12 }, 'rebaseline', 14)).toEqual({ phase: 'collecting', modelVersion: 1, runs: 0, since: 14 });
    expect(monitorStateAfterEvent(judging, 'none', 90)).toBeUndefined();
  });
});

describe('a chamber through a maintenance event (evaluator and harness)', () => {
  const STEPS = [
    { name: 'Ramp', startIndex: 0 },
    { name: 'Main', startIndex: 20 },
  ];
  /** Two correlated sensors; after the PM both sit `shift` higher (a new regime). */
  const run = (i: number, rand: () => number, shift = 0) => {
    const offset = normalDeviate(rand);
    const pressure: number[] = [];
    const flow: number[] = [];
    for (let t = 0; t < 60; t++) {
      pressure.push((t >= 20 ? 40 : 10 + t) + shift + offset + 0.2 * normalDeviate(rand));
      flow.push((t >= 20 ? 200 : 100) + 5 * (shift + offset) + normalDeviate(rand));
    }
    return traceOf(`run-${i}`, { Pressure: pressure, Flow: flow }, { steps: STEPS });
  };
  const doc = { ...DEFAULT_STRATEGY_DOCUMENT, monitor: { baseline: { minRuns: 12, extendTo: false }, mewma: false } };

  it('a PM re-centres (the default): the model kept, its centre learnt again from the runs after it; a fault after it still alarms', () => {
    const rand = seededRandom(9);
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 20; i++) chamber.process(run(i, rand), 'R1', doc);
    chamber.event(event('pm'), doc);
    expect(chamber.monitorState('R1')).toMatchObject({ phase: 'judging', modelVersion: 1, recentre: { runs: 0 } });
    const after = Array.from({ length: 14 }, (_, k) => chamber.process(run(20 + k, rand, 6), 'R1', doc).evaluation);
    // Judged from the first run after the event, none alarmed in the new regime, no new model.
    expect(after.every((e) => e.points.some((p) => p.limitsVersion === 1))).toBe(true);
    expect(after.flatMap((e) => e.alarms)).toEqual([]);
    expect(after.map((e) => e.monitorModel)).toEqual(after.map(() => undefined));
    expect(after.map((e) => (e.monitorState?.phase === 'judging' ? (e.monitorState.recentre?.runs ?? 'done') : '?'))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 'done', 'done', 'done', 'done', 'done']);
    expect(after.at(-1)?.monitorState).toMatchObject({ centre: expect.any(Array) as unknown[] });
    // The flow falls back to where it was before the PM while the pressure stays: alarmed in the new regime.
    const pressure = run(40, rand, 6).svids.get('Pressure') as unknown as ArrayLike<number>;
    const flow = Array.from({ length: 60 }, (_, t) => (t >= 20 ? 200 : 100) + normalDeviate(rand));
    const fault = chamber.process(traceOf('run-40', { Pressure: pressure, Flow: flow }, { steps: STEPS }), 'R1', doc);
    expect(fault.evaluation.alarms).toHaveLength(1);
  });

  it('a PM that changed more than the location (the flow no longer follows the pressure): re-centring gives way to a new Phase I', () => {
    const rand = seededRandom(10);
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 20; i++) chamber.process(run(i, rand), 'R1', doc);
    const at = chamber.event(event('pm'), doc);
    const decoupled = (i: number) => {
      const offset = normalDeviate(rand);
      const pressure = Array.from({ length: 60 }, (_, t) => (t >= 20 ? 40 : 10 + t) + offset + 0.2 * normalDeviate(rand));
      const flow = Array.from({ length: 60 }, (_, t) => (t >= 20 ? 200 : 100) + 5 * normalDeviate(rand) + normalDeviate(rand));
      return traceOf(`run-${i}`, { Pressure: pressure, Flow: flow }, { steps: STEPS });
    };
    const after = Array.from({ length: 20 }, (_, k) => chamber.process(decoupled(20 + k), 'R1', doc).evaluation);
    expect(after.filter((e) => e.alarms.length > 0).length).toBeGreaterThan(10);
    // The 20th run since the event, with fewer than 10 of them unalarmed: Phase I of version 2 after it.
    expect(after[19]?.monitorState).toEqual({ phase: 'collecting', modelVersion: 2, runs: 0, since: at + 20 });
    const refit = Array.from({ length: 13 }, (_, k) => chamber.process(decoupled(40 + k), 'R1', doc).evaluation);
    expect(refit.find((e) => e.monitorModel)?.monitorModel).toMatchObject({ version: 2 });
  });

  it('a model re-centred after an event is not extended (its judged runs span two regimes)', () => {
    const extending = { ...DEFAULT_STRATEGY_DOCUMENT, monitor: { baseline: { minRuns: 12, extendTo: 30 }, mewma: false } };
    const rand = seededRandom(12);
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 14; i++) chamber.process(run(i, rand), 'R1', extending);
    chamber.event(event('pm'), extending);
    for (let i = 14; i < 50; i++) chamber.process(run(i, rand, 6), 'R1', extending);
    expect(chamber.modelVersions().map((m) => m.version)).toEqual([1]);
    // Without the event the same chamber is extended at its 30th usable run.
    const plain = new SimulatedChamber(createRunEvaluator());
    const r2 = seededRandom(12);
    for (let i = 0; i < 50; i++) plain.process(run(i, r2), 'R1', extending);
    expect(plain.modelVersions().map((m) => m.version)).toEqual([1, 2]);
  });

  it('a regime change without its event: one REGIME on the first run of the new regime, the model re-centred from the next runs', () => {
    const wide = (i: number, rand: () => number, shift = 0) => {
      const offset = normalDeviate(rand);
      const svids: Record<string, number[]> = {};
      for (let k = 0; k < 8; k++) svids[`S${k}`] = Array.from({ length: 60 }, (_, t) => (t >= 20 ? 50 : 20) + 10 * k + offset + (k < 6 ? shift : 0) + 0.3 * normalDeviate(rand));
      return traceOf(`run-${i}`, svids, { steps: STEPS });
    };
    const rand = seededRandom(13);
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 20; i++) chamber.process(wide(i, rand), 'R1', doc);
    // Six of the eight sensors 5 sds higher from run 20 on, nothing told.
    const after = Array.from({ length: 15 }, (_, k) => chamber.process(wide(20 + k, rand, 5), 'R1', doc).evaluation);
    const rules = after.map((e) => ((e.alarms[0]?.details as { rules?: string[] } | undefined)?.rules ?? []).includes('REGIME'));
    expect(rules).toEqual(after.map((_, k) => k === 0));
    expect(after.slice(1).flatMap((e) => e.alarms)).toEqual([]);
    expect(after[0]?.monitorState).toMatchObject({ phase: 'judging', modelVersion: 1, recentre: { runs: 0, seen: 0 } });
    // One sensor's fault is no regime: it alarms as before.
    const fault = chamber.process(traceOf('run-50', { ...Object.fromEntries([...wide(50, rand, 5).svids].map(([k, v]) => [k, Array.from(v)])), S7: Array.from({ length: 60 }, (_, t) => (t >= 20 ? 50 : 20) + 70 + 8) }, { steps: STEPS }), 'R1', doc);
    expect(fault.evaluation.alarms).toHaveLength(1);
    expect((fault.evaluation.alarms[0]?.details as { rules: string[] }).rules).not.toContain('REGIME');
  });

  it('a PM re-baselines when the strategy says so: no alarm in the new regime, a model of the next version fitted on the runs after the event only', () => {
    const doc = { ...DEFAULT_STRATEGY_DOCUMENT, monitor: { baseline: { minRuns: 12, extendTo: false }, mewma: false, events: { pm: 'rebaseline' } } };
    const rand = seededRandom(7);
    const chamber = new SimulatedChamber(createRunEvaluator());
    for (let i = 0; i < 20; i++) chamber.process(run(i, rand), 'R1', doc);
    expect(chamber.monitorState('R1')).toMatchObject({ phase: 'judging', modelVersion: 1 });
    // Without the event, the shifted runs alarm.
    const without = new SimulatedChamber(createRunEvaluator());
    const r2 = seededRandom(7);
    for (let i = 0; i < 20; i++) without.process(run(i, r2), 'R1', doc);
    expect(without.process(run(20, r2, 6), 'R1', doc).evaluation.alarms).toHaveLength(1);

    const at = chamber.event(event('pm'), doc);
    expect(chamber.monitorState('R1')).toEqual({ phase: 'collecting', modelVersion: 2, runs: 0, since: at });
    const after = Array.from({ length: 14 }, (_, k) => chamber.process(run(20 + k, rand, 6), 'R1', doc).evaluation);
    expect(after.flatMap((e) => e.alarms)).toEqual([]);
    const fitted = after.findIndex((e) => e.monitorModel !== undefined);
    expect(fitted).toBe(11);
    expect(after[fitted]?.monitorModel).toMatchObject({ version: 2, reason: 'manual' });
    expect(after[fitted]?.monitorModel?.model['baselineRunIds']).toEqual(Array.from({ length: 12 }, (_, k) => `run-${20 + k}`));
    expect(chamber.monitorState('R1')).toMatchObject({ phase: 'judging', modelVersion: 2, judgedRuns: 3 });
  });
});
