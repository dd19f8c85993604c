import { FencedError, InvalidRecordError, MONITOR_MODEL_LIMITS, type DefenderStore, type MonitorModelInput, type MonitorState } from '@defender/contracts';
import { commit, freshChamber, rejection } from './fixtures';

const T0 = new Date(1_700_000_000_000);

/** A model record of `version` whose model has `indicators` charted indicators (about 60 bytes of JSON each). */
export function monitorModelInput(version: number, indicators = 3, reason: MonitorModelInput['reason'] = 'initial'): MonitorModelInput {
  const variables = Array.from({ length: indicators }, (_, i) => `recipe-A|m/SVID ${i % 97}@step ${i}:mean`);
  return {
    version,
    reason,
    excludedRunIds: reason === 'manual' ? ['run-2'] : [],
    createdAt: new Date(T0.getTime() + version * 60_000),
    model: { kind: 'monitor', version, baselineRunIds: ['run-1', 'run-2'], variables, center: variables.map((_, i) => i * 0.5), scale: variables.map(() => 1.25), pca: null },
  };
}

const judging = (modelVersion: number): MonitorState => ({ phase: 'judging', modelVersion, judgedRuns: 1, extensionCheckAt: null, mewma: null, levelOffsets: {} });

/**
 * The contract of `DefenderStore.monitorModels` (registered by `describeStoreContract`): a model is
 * written only by the commit of the run that fitted it, with the recipe's judging state, fenced like it.
 */
export function describeMonitorModelContract(storeOf: () => DefenderStore): void {
  describe('monitor models (per chamber, recipe and version, written with the fitting run)', () => {
    it('a commit stores the model it carries; each version is kept and read by version or as the newest', async () => {
      const store = storeOf();
      const ch = freshChamber();
      expect(await store.monitorModels.get(ch, 'recipe-A')).toBeUndefined();
      expect(await store.monitorModels.versions(ch)).toEqual([]);
      const first = commit(ch, 1, 3, { monitorState: judging(1), monitorModel: monitorModelInput(1) });
      await store.chamberState.commitRun(first);
      const v1 = { ...ch, recipe: 'recipe-A', sequence: 3, runId: 'run-3', committedAt: first.committedAt, ...monitorModelInput(1) };
      expect(await store.monitorModels.get(ch, 'recipe-A')).toEqual(v1);
      // Runs that carry no model leave the stored ones as they are.
      await store.chamberState.commitRun(commit(ch, 1, 4, { monitorState: judging(1) }));
      await store.chamberState.commitRun(commit(ch, 1, 5, { recipe: 'recipe-B', monitorState: judging(4), monitorModel: monitorModelInput(4, 5, 'manual') }));
      await store.chamberState.commitRun(commit(ch, 1, 6, { monitorState: judging(2), monitorModel: monitorModelInput(2, 4, 'extended') }));
      expect(await store.monitorModels.get(ch, 'recipe-A', 1)).toEqual(v1);
      expect(await store.monitorModels.get(ch, 'recipe-A')).toMatchObject({ version: 2, sequence: 6, reason: 'extended', model: monitorModelInput(2, 4).model });
      expect(await store.monitorModels.get(ch, 'recipe-B')).toMatchObject({ recipe: 'recipe-B', version: 4, reason: 'manual', excludedRunIds: ['run-2'] });
      expect(await store.monitorModels.get(ch, 'recipe-A', 3)).toBeUndefined();
      expect((await store.monitorModels.versions(ch)).map((v) => [v.recipe, v.version, v.sequence, v.runId])).toEqual([
        ['recipe-A', 1, 3, 'run-3'],
        ['recipe-A', 2, 6, 'run-6'],
        ['recipe-B', 4, 5, 'run-5'],
      ]);
      expect(await store.monitorModels.get(freshChamber(), 'recipe-A')).toBeUndefined();
    });

    it('stores a model of thousands of indicators (MBs of JSON) with its run', async () => {
      const store = storeOf();
      const ch = freshChamber();
      const large = monitorModelInput(1, 30_000);
      expect(JSON.stringify(large.model).length).toBeGreaterThan(1 << 20);
      await store.chamberState.commitRun(commit(ch, 1, 1, { monitorState: judging(1), monitorModel: large }));
      expect((await store.monitorModels.get(ch, 'recipe-A', 1))?.model).toEqual(large.model);
    });

    it('a fenced commit, a replay and a duplicate run write no model', async () => {
      const store = storeOf();
      const ch = freshChamber();
      await store.chamberState.commitRun(commit(ch, 1, 1, { monitorState: judging(1), monitorModel: monitorModelInput(1) }));
      await store.chamberState.claim(ch, 2, 'defender-2', T0);
      expect(await rejection(store.chamberState.commitRun(commit(ch, 1, 2, { monitorState: judging(2), monitorModel: monitorModelInput(2) })))).toBeInstanceOf(FencedError);
      expect((await store.chamberState.commitRun(commit(ch, 2, 1, { monitorState: judging(3), monitorModel: monitorModelInput(3) }))).outcome).toBe('already-applied');
      expect((await store.chamberState.commitRun(commit(ch, 2, 3, { runId: 'run-1', monitorState: judging(4), monitorModel: monitorModelInput(4) }))).outcome).toBe('duplicate-run');
      expect((await store.monitorModels.versions(ch)).map((v) => v.version)).toEqual([1]);
    });

    it('rejects a model without the judging state of its version, of another kind or too large, writing nothing of the run', async () => {
      const store = storeOf();
      const ch = freshChamber();
      const cases: [Partial<Parameters<typeof commit>[3]>, string][] = [
        [{ monitorModel: monitorModelInput(1) }, 'monitorState'],
        [{ monitorState: judging(2), monitorModel: monitorModelInput(1) }, 'monitorState'],
        [{ monitorState: judging(1), monitorModel: { ...monitorModelInput(1), model: { kind: 'u-chart', version: 1 } } }, 'monitorModel.model.kind'],
        [{ monitorState: judging(1), monitorModel: { ...monitorModelInput(1), reason: 'guess' as 'initial' } }, 'monitorModel.reason'],
        [{ monitorState: judging(1), monitorModel: { ...monitorModelInput(1), model: { kind: 'monitor', version: 1, text: 'x'.repeat(MONITOR_MODEL_LIMITS.modelBytes) } } }, 'monitorModel.model'],
      ];
      for (const [over, path] of cases) {
        const bad = await rejection(store.chamberState.commitRun(commit(ch, 1, 1, over)));
        expect(bad).toBeInstanceOf(InvalidRecordError);
        expect((bad as InvalidRecordError).issues.map((i) => i.path)).toContain(path);
      }
      expect(await store.uchart.run(ch, 1)).toBeUndefined();
      expect(await store.monitorModels.versions(ch)).toEqual([]);
      expect(await rejection(store.monitorModels.get(ch, ''))).toBeInstanceOf(InvalidRecordError);
      expect(await rejection(store.monitorModels.get(ch, 'recipe-A', 0))).toBeInstanceOf(InvalidRecordError);
    });
  });
}
