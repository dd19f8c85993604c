import { formatAlarmLine, formatExplain, formatStatus, mapWeightText, table } from './format';
import { heartbeatOf, mapOf } from './testing';
import { assignmentRows, defenderRows, explain, normalizeDefender } from './views';

describe('defenderRows', () => {
  it('joins heartbeats and the map: alive within 3 intervals, MISSING after, weight against the average', () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const map = mapOf(3, { 'A:1': 'defender-0', 'B:1': 'defender-0', 'C:1': 'defender-1', 'D:1': 'defender-2' }, { weights: { 'A:1': 100, 'B:1': 100, 'C:1': 150, 'D:1': 50 } });
    const rows = defenderRows(
      [
        { heartbeat: heartbeatOf('defender-1'), storedAt: new Date(now - 1000) },
        { heartbeat: heartbeatOf('defender-0'), storedAt: new Date(now - 5000) },
        { heartbeat: heartbeatOf('defender-2'), storedAt: new Date(now - 7000) },
      ],
      map,
      now,
    );
    expect(rows.map((r) => [r.defenderId, r.state, r.alive, r.chambers, r.weight, r.weightVsAvg])).toEqual([
      ['defender-0', 'STABLE', true, 2, 200, 1.5],
      ['defender-1', 'STABLE', true, 1, 150, 1.125],
      ['defender-2', 'MISSING', false, 1, 50, 0.375],
    ]);
  });
});

describe('explain', () => {
  const history = [
    mapOf(1, { 'A:1': 'defender-0', 'B:1': 'defender-1' }),
    mapOf(2, { 'A:1': 'defender-1', 'B:1': 'defender-1' }, { trigger: 'crash' }),
    mapOf(3, { 'A:1': 'defender-2', 'B:1': 'defender-1' }, { trigger: 'planned_scale', moved: { 'A:1': Date.UTC(2026, 0, 1, 0, 3) } }),
  ];

  it('lists each owner change with its trigger and says why the chamber is where it is', () => {
    const e = explain('A:1', history, { weight: { value: 100, source: 'configured' }, alive: new Map([['defender-2', true]]) });
    expect(e.owner).toBe('defender-2');
    expect(e.moves.map((m) => [m.version, m.trigger, m.from, m.to])).toEqual([
      [1, 'cold_start', null, 'defender-0'],
      [2, 'crash', 'defender-0', 'defender-1'],
      [3, 'planned_scale', 'defender-1', 'defender-2'],
    ]);
    expect(e.reasons[0]).toMatch(/came to defender-2 with map v3 \(planned_scale, from defender-1\): defenders joined or left/);
    expect(e.reasons[1]).toMatch(/sticky-balanced .* defender-2 carries 1\.000 × the average weight \(inside the band\)/);
    expect(e.lastMovedAt).toBe('2026-01-01T00:03:00.000Z');
  });

  it('says when the chamber has not moved in the kept versions, and when it is unknown', () => {
    expect(explain('B:1', history.slice(1)).reasons[0]).toMatch(/defender-1 has owned it since before map v2/);
    expect(explain('Z:9', history).reasons[0]).toMatch(/not in map v3: it is not in chamber_metadata/);
    expect(explain('A:1', []).reasons).toEqual(['no assignment map has been published yet']);
  });

  it("says what the chamber monitor remembers of each recipe, from the store's monitor state records", () => {
    const at = new Date(Date.UTC(2026, 0, 1));
    const e = explain('A:1', history, {
      monitor: [
        { toolId: 'A', chamberId: '1', recipe: 'ETCH', sequence: 40, runId: 'r40', committedAt: at, state: { phase: 'judging', modelVersion: 2, judgedRuns: 9, extensionCheckAt: null, mewma: [0.1, 0.2], levelOffsets: { P: 0.1 } } },
        { toolId: 'A', chamberId: '1', recipe: 'CLEAN', sequence: 38, runId: 'r38', committedAt: at, state: { phase: 'collecting', modelVersion: 1, runs: 4 } },
      ],
    });
    expect(e.monitor.map((m) => [m.recipe, m.phase, m.modelVersion, m.runs])).toEqual([
      ['ETCH', 'judging', 2, 9],
      ['CLEAN', 'collecting', 1, 4],
    ]);
    expect(e.monitor[0]?.text).toBe('recipe ETCH: judged by model v2, 9 run(s) judged by it; the centre follows 1 SVID level(s), MEWMA on 2 component(s) (state of run r40, sequence 40)');
    expect(e.monitor[1]?.text).toBe('recipe CLEAN: Phase I, 4 run(s) collected for model v1 (state of run r38, sequence 38)');
    expect(formatExplain(e)).toContain('monitor:\n  - recipe ETCH: judged by model v2');
    expect(explain('A:1', history).monitor).toEqual([]);
    // With the model record the judging state names: what that model is.
    const model = {
      toolId: 'A',
      chamberId: '1',
      recipe: 'ETCH',
      version: 2,
      sequence: 31,
      runId: 'r31',
      committedAt: at,
      reason: 'extended' as const,
      excludedRunIds: [],
      createdAt: at,
      model: {
        kind: 'monitor',
        version: 2,
        baselineRunIds: ['r1', 'r2', 'r3'],
        variables: ['ETCH|m/P@s:mean', 'ETCH|m/F@s:mean'],
        center: [1, 2],
        scale: [0.1, 0.2],
        notCharted: [],
        pca: { components: 1, explainedVariance: 0.8, limits: { t2: 12.345, spe: 3.21 } },
      },
    };
    const judging = { phase: 'judging' as const, modelVersion: 2, judgedRuns: 9, extensionCheckAt: null, mewma: null, levelOffsets: {} };
    const withModel = explain('A:1', history, { monitor: [{ toolId: 'A', chamberId: '1', recipe: 'ETCH', sequence: 40, runId: 'r40', committedAt: at, state: judging }], models: [model] });
    expect(withModel.monitor[0]?.text).toMatch(/; model v2 extended by run r31 \(sequence 31\) on 3 Phase I run\(s\): 2 indicator\(s\) charted, T² limit 12\.35, SPE limit 3\.210, 1 component\(s\)$/);
  });

  it("says what the chamber remembers of its runs' alarms, from the store's chamber memory record", () => {
    const at = new Date(Date.UTC(2026, 0, 1));
    const e = explain('A:1', history, { memory: { toolId: 'A', chamberId: '1', sequence: 41, runId: 'r41', committedAt: at, memory: { recentAlarms: [false, true, false, false, true, true], fromFirstRun: false } } });
    expect(e.memory).toBe('remembers the alarms of its newest 6 judged run(s) (6): 3 of the newest 5 alarmed, 010011 oldest first (memory of run r41, sequence 41)');
    expect(formatExplain(e)).toContain('\n  - the chamber remembers the alarms of its newest 6');
    const young = explain('A:1', history, { memory: { toolId: 'A', chamberId: '1', sequence: 2, runId: 'r2', committedAt: at, memory: { recentAlarms: [false, false], fromFirstRun: true } } });
    expect(young.memory).toMatch(/^remembers the alarms of every judged run since its first \(2\): 0 of the newest 2 alarmed/);
    expect(explain('A:1', history).memory).toBeNull();
  });

  it('warns when the owner is not heartbeating', () => {
    expect(explain('A:1', history, { alive: new Map([['defender-2', false]]) }).reasons.at(-1)).toMatch(/defender-2 is not heartbeating/);
  });
});

describe('assignments and helpers', () => {
  it('filters by defender and sorts by owner then chamber', () => {
    const m = mapOf(4, { 'B:1': 'defender-10', 'A:1': 'defender-2', 'C:1': 'defender-2' });
    expect(assignmentRows(m, new Map([['A:1', 7]])).map((r) => [r.chamber, r.owner, r.weight])).toEqual([
      ['A:1', 'defender-2', 7],
      ['C:1', 'defender-2', null],
      ['B:1', 'defender-10', null],
    ]);
    expect(assignmentRows(m, new Map(), 'defender-10').map((r) => r.chamber)).toEqual(['B:1']);
  });

  it.each([
    ['2', 'defender-2'],
    ['defender-12', 'defender-12'],
    ['defender-012', undefined],
    ['pod-1', undefined],
  ])('normalizeDefender(%s)', (input, want) => expect(normalizeDefender(input)).toBe(want));

  it('formats a table with numbers right-aligned', () => {
    expect(table(['NAME', 'N'], [['a', 1], ['bbb', 10]])).toBe('NAME   N\n----  --\na      1\nbbb   10');
  });
});

describe('formatAlarmLine', () => {
  const at = new Date(Date.UTC(2026, 0, 1, 12, 0, 1));
  it('a per-indicator rule: the value against the limits it was compared with, only those it has', () => {
    expect(formatAlarmLine('defense.alarms.A.1', at, { toolId: 'A', chamberId: '1', ruleId: 'WE1', runId: 'r1', svid: 'P', statistic: 'mean', value: 3.5, lcl: 0, center: 1.5, ucl: 3, action: 'ALARM' })).toBe(
      '12:00:01  A:1              WE1   run r1  P mean = 3.5 (LCL 0, CL 1.5, UCL 3)  ALARM',
    );
    expect(formatAlarmLine('defense.alarms.A.1', at, { toolId: 'A', chamberId: '1', ruleId: 'RUN', runId: 'r1', svid: 'P', statistic: 'max', value: 9, ucl: 8, action: 'ALARM' })).toBe('12:00:01  A:1              RUN   run r1  P max = 9 (UCL 8)  ALARM');
  });

  it('a chamber-monitor alarm: T² / SPE / MEWMA against their limits and the univariate checks, never empty limits', () => {
    const details = {
      violations: [
        { rule: 'SPE', value: 7.123456789, limit: 2.5, contributions: [{ indicatorKey: 'R|m/GAS@ME:std', share: 0.5, svid: 'GAS', statistic: 'std' }] },
        { rule: 'LIMIT', value: 12, lcl: 1, ucl: 10, svid: 'P', statistic: 'max' },
        { rule: 'CONSTANT', value: 2, center: 1, svid: 'V', statistic: 'last' },
        { rule: 'RESIDUAL', value: 5, limit: 4, svid: 'F', statistic: 'mean' },
        { rule: 'WE1', value: 3, lcl: 0, ucl: 2, svid: 'Q', statistic: 'mean' },
      ],
    };
    expect(formatAlarmLine('defense.alarms.A.1', at, { toolId: 'A', chamberId: '1', ruleId: 'RUN', runId: 'r2', value: null, action: 'ALARM', details })).toBe(
      '12:00:01  A:1              RUN   run r2  SPE 7.12346 > 2.5, P max 12 outside [1, 10], V last 2 left its constant 1, +1 more (top: GAS std 50 %)  ALARM',
    );
  });
});

/** Issue 52, item 3: the map's weights with one unit each (the controller's balanceBy), never the chamber's samples/run by default. */
describe('map weights with their unit', () => {
  it('load (expected CPU µs per hour) as CPU s/h, samples as samples/run, no unit claimed when no controller says', () => {
    expect(mapWeightText(83_700_000, 'load')).toBe('83.7 CPU s/h');
    expect(mapWeightText(3_800_000, 'samples')).toBe('3.8M samples/run');
    expect(mapWeightText(7_500_000, null)).toBe('7.5M (map weight)');
  });

  it("explain's owner load and status's column use the controllers' unit", () => {
    const map = mapOf(2, { 'A:1': 'defender-0' }, { weights: { 'A:1': 83_700_000 } });
    const e = explain('A:1', [map], { weight: { value: 120_000, source: 'declared' }, weightUnit: 'load' });
    const text = formatExplain(e);
    expect(text).toContain('weight      120,000 samples/run (declared)');
    expect(text).toContain('owner load  1 chambers, 83.7 CPU s/h = 1.000 x average');
    const controllers = [{ url: 'http://c', reachable: true, controllerId: 'c-0', isLeader: true, clusterState: 'STABLE', lifecycle: 'stable', pendingTrigger: null, balanceBy: 'load' as const }];
    const view = { leader: null, controllers, map: null, defenders: defenderRows([], map, Date.now()), streams: [], marks: null, problems: [] };
    expect(formatStatus(view)).toMatch(/CHAMBERS +LOAD CPU s\/h +VS AVG/);
    expect(formatStatus(view)).toMatch(/defender-0 .* 1 +83\.7 +1\.00x/);
    expect(formatStatus({ ...view, controllers: [] })).toMatch(/CHAMBERS +MAP WEIGHT +VS AVG/);
  });
});
