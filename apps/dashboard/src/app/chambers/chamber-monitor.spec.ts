/**
 * The chamber monitor on the chamber page: runs judged by the product's evaluator under the `monitor`
 * preset and committed to a real SQLite store the way a defender commits them; the dashboard reads
 * them back (the chamber endpoint's JSON) and renders them (assets/render.js, as the browser does).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AlarmInput, ChamberRef, MonitorModelRecord, RunNotification, TraceRecord } from '@defender/contracts';
import { DEFAULT_STRATEGY_DOCUMENT } from '@defender/defense-rules';
import { Gaussian, rng } from '@defender/fab-sim';
import { createRunEvaluator } from '@defender/pipeline';
import { SqliteStore } from '@defender/store';
import type { StoreService } from '@defender/nest-common';
import { feedItemOf } from '../alarms/alarm-feed.service';
import type { AlarmFeedService } from '../alarms/alarm-feed.service';
import type { ClusterWatcherService } from '../cluster/cluster-watcher.service';
import type { DashboardConfig } from '../config';
import { byTestId, elementsOf, loadPageRender, rowsOf, textOf } from '../../testing/page';
import { ChamberService, type ChamberDetail } from './chamber.service';

const chamber: ChamberRef = { toolId: 'ETCH01', chamberId: 'PM3' };
const RECIPE = 'R1';
const PHASE_I = 20;
const FAULTY = 26;
const RUNS = 30;
const T0 = Date.UTC(2026, 0, 1);
const STEPS = [
  { name: 'Ramp', startIndex: 0 },
  { name: 'Main', startIndex: 20 },
];
const strategy = { ...DEFAULT_STRATEGY_DOCUMENT, monitor: { baseline: { minRuns: PHASE_I } } };

/**
 * One run: pressure and flow share a run offset (flow = 5 x pressure's), a setpoint holds 500 in Main.
 * The faulty run's flow is 60 higher in Main with pressure unchanged: the correlation breaks.
 */
function traceOf(runId: string, g: Gaussian, faulty: boolean): TraceRecord {
  const offset = g.next();
  const pressure: number[] = [];
  const flow: number[] = [];
  const setpoint: number[] = [];
  for (let t = 0; t < 60; t++) {
    const main = t >= 20;
    pressure.push((main ? 40 : 10 + t) + offset + 0.2 * g.next());
    flow.push((main ? 200 : 100) + 5 * offset + g.next() + (main && faulty ? 60 : 0));
    setpoint.push(main ? 500 : 0);
  }
  return {
    ...chamber,
    runId,
    timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 },
    svids: new Map([
      ['Pressure', Float64Array.from(pressure)],
      ['Flow', Float64Array.from(flow)],
      ['SP_001', Float64Array.from(setpoint)],
    ]),
    steps: STEPS,
  };
}

function notificationOf(trace: TraceRecord, at: Date): RunNotification {
  return {
    schema: 1,
    toolId: trace.toolId,
    chamberId: trace.chamberId,
    runId: trace.runId,
    recipe: RECIPE,
    contextWindow: { start: at.toISOString(), end: at.toISOString() },
    svids: [...trace.svids.keys()],
    trace: { store: 'default' },
    completedAt: at.toISOString(),
  };
}

describe('the chamber monitor on the chamber page (evaluator records in a real SQLite store)', () => {
  const render = loadPageRender();
  let dir: string;
  let store: SqliteStore;
  let detail: ChamberDetail;
  let model: MonitorModelRecord;
  /** The run-level alarm of the faulty run, as the defender published it on defense.alarms.<tool>.<chamber>. */
  let published: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dashboard-monitor-'));
    store = await SqliteStore.open({ filename: join(dir, 'd.db') });
    await store.chamberState.claim(chamber, 1, 'defender-0', new Date(T0));
    // What ChamberWorker does per run: history, limits, the recipe's monitor state and the chamber's
    // memory from the store, evaluate, limits then the run (with the state and the memory after it).
    const evaluator = createRunEvaluator();
    const g = new Gaussian(rng(7));
    for (let sequence = 1; sequence <= RUNS; sequence++) {
      const now = new Date(T0 + sequence * 60_000);
      const trace = traceOf(`run-${sequence}`, g, sequence === FAULTY);
      const stored = await store.monitorState.get(chamber, RECIPE);
      const storedModel = stored?.state.phase === 'judging' ? await store.monitorModels.get(chamber, RECIPE, stored.state.modelVersion) : undefined;
      const remembered = await store.chamberMemory.get(chamber);
      const evaluation = evaluator.evaluate({
        chamber,
        sequence,
        notification: notificationOf(trace, now),
        trace,
        history: await store.uchart.history(chamber, { limit: evaluator.fullHistoryRuns(strategy) }),
        limits: await store.uchart.currentLimitSets(chamber),
        strategy,
        now,
        ...(stored ? { monitorState: stored.state } : {}),
        ...(storedModel ? { monitorModel: storedModel } : {}),
        ...(remembered?.sequence === sequence - 1 ? { chamberMemory: remembered.memory } : {}),
      });
      for (const ls of evaluation.newLimitSets) await store.uchart.putLimitSet(ls);
      await store.chamberState.commitRun({
        chamber,
        epoch: 1,
        ownerId: 'defender-0',
        sequence,
        runId: trace.runId,
        recipe: RECIPE,
        committedAt: now,
        points: evaluation.points,
        alarms: evaluation.alarms,
        ...(evaluation.hold ? { hold: evaluation.hold } : {}),
        ...(evaluation.monitorState ? { monitorState: evaluation.monitorState } : {}),
        ...(evaluation.monitorModel ? { monitorModel: evaluation.monitorModel } : {}),
        ...(evaluation.chamberMemory ? { chamberMemory: evaluation.chamberMemory } : {}),
      });
      if (sequence === FAULTY) {
        const alarm = evaluation.alarms.find((a: AlarmInput) => a.ruleId === 'RUN');
        published = JSON.stringify({ ...alarm, ...chamber, runId: trace.runId, sequence, recipe: RECIPE, epoch: 1, ownerId: 'defender-0' });
      }
    }
    model = (await store.monitorModels.get(chamber, RECIPE))!;
    const config = { CHART_RUNS: 100 } as DashboardConfig;
    const service = new ChamberService(
      config,
      { ready: async () => store } as unknown as StoreService,
      { currentMap: () => null, notificationStreamId: () => null } as unknown as ClusterWatcherService,
      { recent: () => [] } as unknown as AlarmFeedService,
    );
    // The endpoint's body: what the page receives.
    detail = JSON.parse(JSON.stringify(await service.detail('ETCH01:PM3'))) as ChamberDetail;
  });

  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const limitsOfModel = () => (model.model as unknown as { pca: { limits: { t2: number; spe: number } } }).pca.limits;

  it("returns T² and SPE per run with the limits of the model record, the Phase I runs' from the model's fit, and the alarmed run", () => {
    expect(model).toMatchObject({ version: 1, reason: 'initial' });
    expect(detail.monitors).toHaveLength(1);
    const m = detail.monitors[0]!;
    const { t2, spe } = limitsOfModel();
    expect(m).toMatchObject({ recipe: RECIPE, modelKey: 'R1|m:model', limits: { version: 1, t2, spe, baselineRuns: PHASE_I }, rebaseline: null });
    expect(m.limits!.charted).toBeGreaterThan(0);
    expect(m.limits!.notCharted['constant']).toBeGreaterThan(0);
    expect(m.points.map((p) => p.sequence)).toEqual(Array.from({ length: RUNS }, (_, i) => i + 1));
    // Phase I: judged by no model; its runs carry the fit's own T² and SPE (in sample), in the model's run order.
    const fit = (model.model as unknown as { pca: { phaseOne: { t2: number[]; spe: number[] } } }).pca.phaseOne;
    expect(m.points.slice(0, PHASE_I - 1).every((p) => p.limitsVersion === null && p.phaseOne === true)).toBe(true);
    expect(m.points.slice(0, PHASE_I - 1).map((p) => [p.t2, p.spe])).toEqual(fit.t2.slice(0, PHASE_I - 1).map((t, i) => [t, fit.spe[i]]));
    // The run that completed it is judged by the model it froze.
    expect(m.points[PHASE_I - 1]).toMatchObject({ newLimits: true, limitsVersion: 1 });
    expect(m.points.slice(PHASE_I - 1).every((p) => typeof p.t2 === 'number' && typeof p.spe === 'number')).toBe(true);
    const bad = m.points[FAULTY - 1]!;
    expect(bad.runAlarmed).toBe(true);
    expect(bad.spe).toBeGreaterThan(spe);
    expect(bad.rules).toContain('SPE');
    expect(m.alarmedRuns).toBe(m.points.filter((p) => p.runAlarmed).length);
    // What the monitor remembers of the recipe, from the store's state record: judging since Phase I completed.
    expect(m.state).toMatchObject({ phase: 'judging', modelVersion: 1, runs: RUNS - PHASE_I + 1, sequence: RUNS, runId: `run-${RUNS}` });
    // What the chamber remembers of its runs, from the store's chamber memory record: every run so far, the faulty one alarmed.
    expect(detail.memory).toMatchObject({ fromFirstRun: true, sequence: RUNS, runId: `run-${RUNS}` });
    expect(detail.memory!.recentAlarms).toEqual(m.points.map((p) => p.runAlarmed));
    const head = render.memoryFact(detail.memory);
    expect(byTestId(head, 'chamber-memory')).toEqual([expect.objectContaining({ 'data-alarmed-recent': String(m.points.slice(-5).filter((p) => p.runAlarmed).length) })]);
    expect(textOf(head)).toContain(m.points.slice(-20).map((p) => (p.runAlarmed ? '●' : '○')).join(''));
    expect(render.memoryFact(null)).toBe('');
    // The model is not a U-chart; the monitor's indicators without a violation are not either.
    expect(detail.charts.some((c) => c.indicatorKey === 'R1|m:model')).toBe(false);
    expect(detail.charts.every((c) => c.monitor === null || c.violations > 0)).toBe(true);
    expect(detail.hiddenMonitoredCharts).toBeGreaterThan(0);
  });

  it('renders the T² and SPE charts: the limit line, a point per run (Phase I hollow, from the fit), Phase I shaded, the alarmed run marked', () => {
    const m = detail.monitors[0]!;
    const html = render.monitorCard(m);
    expect(byTestId(html, 'monitor')).toEqual([expect.objectContaining({ 'data-recipe': RECIPE })]);
    const charts = byTestId(html, 'monitor-chart');
    expect(charts.map((c) => c['data-stat'])).toEqual(['T2', 'SPE']);
    const { t2, spe } = limitsOfModel();
    expect(charts.map((c) => Number(c['data-limit']))).toEqual([t2, spe]);
    for (const stat of ['T2', 'SPE'] as const) {
      const svg = render.monitorSvg(m, stat);
      const els = elementsOf(svg);
      const ucl = els.filter((e) => e.tag === 'line' && e.attrs['class'] === 'ucl');
      expect(ucl.map((e) => Number(e.attrs['data-value']))).toEqual([stat === 'T2' ? t2 : spe]);
      const points = els.filter((e) => e.tag === 'circle');
      expect(points.map((e) => e.attrs['data-run'])).toEqual(m.points.map((p) => p.runId));
      expect(points.filter((e) => e.attrs['data-phase-one'] === 'true')).toHaveLength(PHASE_I - 1);
      expect(els.filter((e) => e.tag === 'rect' && e.attrs['class'] === 'phase1')).toHaveLength(1);
      expect(byTestId(svg, 'alarmed-run').map((a) => a['data-run'])).toContain(`run-${FAULTY}`);
    }
    // The faulty run is above the SPE limit: its point is marked as the violation.
    expect(byTestId(render.monitorSvg(m, 'SPE'), 'monitor-violation').map((p) => p['data-run'])).toContain(`run-${FAULTY}`);
    expect(textOf(html)).toContain('model v1: T² ≤');
  });

  it('marks each equipment event on the charts, between the runs it came between, with what it was', async () => {
    // Another chamber of the same store: a run, a PM note between two runs, a run.
    const other: ChamberRef = { toolId: 'ETCH01', chamberId: 'PM4' };
    const point = (value: number) => [{ indicatorKey: 'R1|p-mean', value, flags: 0 }];
    const base = { chamber: other, epoch: 1, ownerId: 'defender-0', recipe: RECIPE };
    await store.chamberState.commitRun({ ...base, sequence: 1, runId: 'r1', committedAt: new Date(T0), points: point(1) });
    const event = { schema: 1 as const, ...other, eventId: 'pm-7', kind: 'pm' as const, at: new Date(T0 + 30_000).toISOString(), note: 'quarterly PM', author: 'alice' };
    await store.chamberState.commitRun({ ...base, sequence: 2, runId: 'event:pm-7', committedAt: new Date(T0 + 30_000), points: [], event: { event, monitorStates: [] } });
    await store.chamberState.commitRun({ ...base, sequence: 3, runId: 'r3', committedAt: new Date(T0 + 60_000), points: point(2) });
    const service = new ChamberService(
      { CHART_RUNS: 100 } as DashboardConfig,
      { ready: async () => store } as unknown as StoreService,
      { currentMap: () => null, notificationStreamId: () => null } as unknown as ClusterWatcherService,
      { recent: () => [] } as unknown as AlarmFeedService,
    );
    const d = JSON.parse(JSON.stringify(await service.detail('ETCH01:PM4'))) as ChamberDetail;
    expect(d.events).toEqual([{ sequence: 2, eventId: 'pm-7', kind: 'pm', at: event.at, note: 'quarterly PM', author: 'alice' }]);
    const chart = d.charts.find((c) => c.indicatorKey === 'R1|p-mean')!;
    const marks = byTestId(render.chartSvg(chart, d.events), 'event-marker');
    expect(marks.map((m) => [m['data-kind'], m['data-sequence']])).toEqual([['pm', '2']]);
    expect(textOf(render.chartSvg(chart, d.events))).toContain('quarterly PM');
    // The monitor's charts mark it the same way; an event outside the charted runs is not drawn.
    expect(byTestId(render.monitorSvg(detail.monitors[0]!, 'T2', [{ sequence: 5, eventId: 'c', kind: 'clean', at: event.at }]), 'event-marker').map((m) => m['data-sequence'])).toEqual(['5']);
    expect(byTestId(render.chartSvg(chart, [{ sequence: 9, eventId: 'x', kind: 'note', at: event.at }]), 'event-marker')).toEqual([]);
  });

  it("renders the faulty run's alarm as contribution bars: its top contributors with their share", () => {
    const alarm = detail.alarms.find((a) => a.runId === `run-${FAULTY}`)!;
    expect(alarm.ruleId).toBe('RUN');
    const run = alarm.run!;
    expect(run.rules).toContain('SPE');
    const speViolation = run.violations.find((v) => v.rule === 'SPE')!;
    expect(speViolation.contributions.length).toBeGreaterThan(0);
    // Flow moved without pressure: flow drives the residual (its level in Main, or that level against the run's).
    expect(speViolation.contributions[0]!.label).toMatch(/^Flow [a-z0-9_-]+ in \w+$/);
    const html = render.runAlarmCard(alarm);
    expect(byTestId(html, 'run-alarm')).toEqual([expect.objectContaining({ 'data-run': `run-${FAULTY}` })]);
    const speBlock = html.slice(html.indexOf('data-rule="SPE"'));
    const bars = byTestId(speBlock, 'contribution').slice(0, speViolation.contributions.length);
    expect(bars.map((b) => [b['data-indicator'], Number(b['data-share'])])).toEqual(speViolation.contributions.map((c) => [c.indicatorKey, c.share]));
    const widths = elementsOf(speBlock).filter((e) => e.attrs['class'] === 'fill').slice(0, speViolation.contributions.length);
    expect(widths.map((e) => Number(e.attrs['data-width']))).toEqual(speViolation.contributions.map((c) => Number((c.share! * 100).toFixed(1))));
    // The chamber's alarm table: one row for the run.
    expect(rowsOf(render.chamberAlarmRow(alarm))).toHaveLength(1);
  });

  it('the alarm feed shows the run-level alarm as one line: the rules, the run and its top contributors', () => {
    const item = feedItemOf('defense.alarms.ETCH01.PM3', 41, new Date(T0), published);
    expect(item?.run?.violations.length).toBeGreaterThan(1);
    const rows = rowsOf(render.alarmRow(item));
    expect(rows).toHaveLength(1);
    const [, chamberCell, runCell, ruleCell, contributors, values, limits, action] = rows[0]!;
    expect([chamberCell, runCell, action]).toEqual(['ETCH01:PM3', `run-${FAULTY}`, 'ALARM']);
    expect(ruleCell).toBe(`RUN ${item!.run!.rules.map((r) => (r === 'T2' ? 'T²' : r)).join('+')}`);
    expect(item!.run!.top.length).toBeGreaterThan(0);
    for (const c of item!.run!.top) expect(contributors).toMatch(new RegExp(`${c.label} \\d+(\\.\\d)?%`));
    expect(values).toContain(`SPE`);
    expect(limits).toContain('≤');
  });
});
