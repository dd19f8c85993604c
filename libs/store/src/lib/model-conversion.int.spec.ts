/**
 * Issue 48, migration: a store written by the previous release keeps each recipe's chamber-monitor
 * model in limit sets (`<recipe>|m:model`). The first run of this release judged by such a model
 * commits it as the recipe's model record (`converted`); from then on the record is the model. Runs on
 * real stores (SQLite, and Cassandra from the harness) the way a defender reads and commits a run
 * (RunIO): the recipe's state, the model its state names (else the newest; none in Phase I), the limit
 * sets, the history.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChamberRef, DefenderStore, MonitorModelRecord } from '@defender/contracts';
import { DEFAULT_STRATEGY_DOCUMENT, type MonitorModel } from '@defender/defense-rules';
import { describeWithInfra, testCassandra } from '@defender/infra-harness';
import { createRunEvaluator, legacyModelLimitSets, needsMoreHistory, type RunEvaluation } from '@defender/pipeline';
import { trace as fixtureTrace } from '../testing/fixtures';
import { CassandraStore } from './cassandra/cassandra-store';
import { SqliteStore } from './sqlite/sqlite-store';

const RECIPE = 'recipe-A';
const PHASE_I = 12;
const T0 = Date.UTC(2026, 0, 1);
const strategy = { ...DEFAULT_STRATEGY_DOCUMENT, monitor: { baseline: { minRuns: PHASE_I } } };

/**
 * Runs `runs` runs of the chamber through the product's evaluator, read and committed as a defender
 * does. `previousRelease`: commits as the previous release did, the model as limit sets (put before the
 * run's commit) and no model record.
 */
async function runChamber(store: DefenderStore, chamber: ChamberRef, from: number, runs: number, previousRelease: boolean): Promise<RunEvaluation[]> {
  const evaluator = createRunEvaluator();
  const out: RunEvaluation[] = [];
  for (let sequence = from; sequence < from + runs; sequence++) {
    const now = new Date(T0 + sequence * 60_000);
    const trace = fixtureTrace(chamber, `run-${sequence}`, 3, 80, { dtype: 'f64', seed: sequence });
    const state = (await store.monitorState.get(chamber, RECIPE))?.state;
    const monitorModel = state?.phase === 'collecting' ? undefined : await store.monitorModels.get(chamber, RECIPE, state?.modelVersion);
    const memory = await store.chamberMemory.get(chamber);
    const input = {
      chamber,
      sequence,
      notification: { schema: 1 as const, ...chamber, runId: trace.runId, recipe: RECIPE, contextWindow: { start: now.toISOString(), end: now.toISOString() }, svids: [...trace.svids.keys()], trace: { store: 'default' as const }, completedAt: now.toISOString() },
      trace,
      limits: await store.uchart.currentLimitSets(chamber),
      strategy,
      now,
      ...(state ? { monitorState: state } : {}),
      ...(monitorModel ? { monitorModel } : {}),
      ...(memory?.sequence === sequence - 1 ? { chamberMemory: memory.memory } : {}),
    };
    // The steady state's history first, the full history when the run asks for it (RunIO, run-attempt).
    const limit = evaluator.historyRuns(strategy, undefined, input.chamberMemory);
    const first = evaluator.evaluate({ ...input, history: limit === 0 ? [] : await store.uchart.history(chamber, { limit }), historyLimit: limit });
    const evaluation = needsMoreHistory(first) ? evaluator.evaluate({ ...input, history: await store.uchart.history(chamber, { limit: first.runs }) }) : first;
    for (const ls of evaluation.newLimitSets) await store.uchart.putLimitSet(ls);
    const fitted = previousRelease ? evaluation.monitorModel : undefined;
    if (fitted) for (const ls of legacyModelLimitSets(chamber, `${RECIPE}|m:model`, fitted.model as unknown as MonitorModel, fitted.createdAt, 'initial', [])) await store.uchart.putLimitSet(ls);
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
      ...(evaluation.monitorState ? { monitorState: evaluation.monitorState } : {}),
      ...(evaluation.monitorModel && !previousRelease ? { monitorModel: evaluation.monitorModel } : {}),
      ...(evaluation.chamberMemory ? { chamberMemory: evaluation.chamberMemory } : {}),
    });
    out.push(evaluation);
  }
  return out;
}

function describeConversion(name: string, open: () => Promise<DefenderStore>): void {
  describe(`a previous release's monitor model is converted on first use (${name})`, () => {
    let store: DefenderStore;
    beforeAll(async () => {
      store = await open();
    }, 120_000);
    afterAll(async () => {
      await store?.close();
    }, 60_000);

    it('the first run judged by the limit-set model stores it as the record; later runs read the record', async () => {
      const chamber: ChamberRef = { toolId: `CONV${randomBytes(3).toString('hex')}`, chamberId: 'PM1' };
      // The previous release: Phase I, and a few runs judged by its limit-set model.
      const before = await runChamber(store, chamber, 1, PHASE_I + 3, true);
      expect(before[PHASE_I - 1]?.monitorModel).toMatchObject({ version: 1, reason: 'initial' });
      expect(await store.monitorModels.versions(chamber)).toEqual([]);
      const legacy = (await store.uchart.currentLimitSets(chamber)).find((l) => l.indicatorKey === `${RECIPE}|m:model`);
      expect(legacy).toMatchObject({ chartType: 'monitor', version: 1 });

      // This release: the first run is judged by that model and converts it; the next ones read the record.
      const after = await runChamber(store, chamber, PHASE_I + 4, 3, false);
      expect(after[0]?.monitorModel).toMatchObject({ version: 1, reason: 'converted', createdAt: legacy?.createdAt });
      expect(after[0]?.points.find((p) => p.indicatorKey === `${RECIPE}|m:model`)?.limitsVersion).toBe(1);
      expect(after.slice(1).map((e) => e.monitorModel)).toEqual([undefined, undefined]);
      const record = (await store.monitorModels.get(chamber, RECIPE)) as MonitorModelRecord;
      expect(record).toMatchObject({ recipe: RECIPE, version: 1, reason: 'converted', sequence: PHASE_I + 4, runId: `run-${PHASE_I + 4}` });
      expect(record.model).toEqual(legacy?.params['model']);
      expect((await store.monitorModels.versions(chamber)).map((v) => v.version)).toEqual([1]);
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'defender-model-conversion-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeConversion('SQLite', () => SqliteStore.open({ filename: join(dir, 'conversion.db') }));

describeWithInfra(['cassandra'], 'on Cassandra', () => {
  describeConversion('Cassandra', () => {
    const c = testCassandra();
    return CassandraStore.connect({ contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, keyspace: `conv_${randomBytes(3).toString('hex')}`, requestTimeoutMs: 30_000 });
  });
});
