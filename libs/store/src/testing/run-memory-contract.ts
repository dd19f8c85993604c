import { CHAMBER_MEMORY_LIMITS, FencedError, InvalidRecordError, type ChamberMemory, type DefenderStore, type MonitorJudging, type MonitorState } from '@defender/contracts';
import { commit, freshChamber, rejection } from './fixtures';

const T0 = new Date(1_700_000_000_000);

/**
 * The contract of what a chamber remembers between runs (registered by `describeStoreContract`): the
 * monitor state per recipe and the chamber's memory, each written only with its run, fenced like it.
 */
export function describeRunMemoryContract(storeOf: () => DefenderStore): void {
  let store: DefenderStore;
  beforeAll(() => {
    store = storeOf();
  });

  describe('monitor state (per chamber and recipe, written with its run)', () => {
    const judging = (judgedRuns: number): MonitorJudging => ({
      phase: 'judging',
      modelVersion: 2,
      judgedRuns,
      extensionCheckAt: judgedRuns + 5,
      mewma: [0.25, -1.5e-3],
      levelOffsets: { 'RF Forward': 0.125, 'Chamber Pressure': -3.5 },
    });

    it('a commit stores the recipe\'s state with the run; the next one of the recipe replaces it, other recipes keep theirs', async () => {
      const ch = freshChamber();
      expect(await store.monitorState.get(ch, 'recipe-A')).toBeUndefined();
      expect(await store.monitorState.list(ch)).toEqual([]);
      const first = commit(ch, 1, 3, { monitorState: { phase: 'collecting', modelVersion: 1, runs: 1 } });
      await store.chamberState.commitRun(first);
      expect(await store.monitorState.get(ch, 'recipe-A')).toEqual({
        ...ch,
        recipe: 'recipe-A',
        sequence: 3,
        runId: 'run-3',
        committedAt: first.committedAt,
        state: { phase: 'collecting', modelVersion: 1, runs: 1 },
      });
      await store.chamberState.commitRun(commit(ch, 1, 4, { recipe: 'recipe-B', monitorState: judging(1) }));
      // A run that carries no state leaves the stored one as it is.
      await store.chamberState.commitRun(commit(ch, 1, 5));
      await store.chamberState.commitRun(commit(ch, 1, 6, { monitorState: judging(7) }));
      const list = await store.monitorState.list(ch);
      expect(list.map((r) => [r.recipe, r.sequence, r.state])).toEqual([
        ['recipe-A', 6, judging(7)],
        ['recipe-B', 4, judging(1)],
      ]);
      expect(await store.monitorState.get(ch, 'recipe-B')).toEqual(list[1]);
      expect(await store.monitorState.get(freshChamber(), 'recipe-A')).toBeUndefined();
    });

    it('a fenced commit, a replay and a duplicate run write no state', async () => {
      const ch = freshChamber();
      await store.chamberState.commitRun(commit(ch, 1, 1, { monitorState: judging(1) }));
      await store.chamberState.claim(ch, 2, 'defender-2', T0);
      expect(await rejection(store.chamberState.commitRun(commit(ch, 1, 2, { monitorState: judging(99) })))).toBeInstanceOf(FencedError);
      expect((await store.chamberState.commitRun(commit(ch, 2, 1, { monitorState: judging(98) }))).outcome).toBe('already-applied');
      expect((await store.chamberState.commitRun(commit(ch, 2, 3, { runId: 'run-1', monitorState: judging(97) }))).outcome).toBe('duplicate-run');
      expect((await store.monitorState.get(ch, 'recipe-A'))?.state).toEqual(judging(1));
      expect((await store.chamberState.commitRun(commit(ch, 2, 4, { monitorState: judging(2) }))).outcome).toBe('applied');
      expect(await store.monitorState.get(ch, 'recipe-A')).toMatchObject({ sequence: 4, runId: 'run-4', state: judging(2) });
    });

    it('rejects an invalid state, or one without its recipe, writing nothing of the run', async () => {
      const ch = freshChamber();
      const invalid = { ...judging(1), judgedRuns: 0, mewma: [NaN] } as MonitorState;
      const bad = await rejection(store.chamberState.commitRun(commit(ch, 1, 1, { monitorState: invalid })));
      expect(bad).toBeInstanceOf(InvalidRecordError);
      expect((bad as InvalidRecordError).issues.map((i) => i.path).sort()).toEqual(['monitorState.judgedRuns', 'monitorState.mewma']);
      const { recipe: _recipe, ...withoutRecipe } = commit(ch, 1, 1, { monitorState: judging(1) });
      expect(await rejection(store.chamberState.commitRun(withoutRecipe))).toBeInstanceOf(InvalidRecordError);
      expect(await store.uchart.run(ch, 1)).toBeUndefined();
      expect(await store.monitorState.list(ch)).toEqual([]);
      expect(await rejection(store.monitorState.get(ch, ''))).toBeInstanceOf(InvalidRecordError);
    });
  });

  describe('chamber memory (per chamber, written with its run)', () => {
    const memory = (...flags: boolean[]): ChamberMemory => ({ recentAlarms: flags, fromFirstRun: flags.length < 3 });

    it('a commit stores the memory with the run; the next one that carries one replaces it', async () => {
      const ch = freshChamber();
      expect(await store.chamberMemory.get(ch)).toBeUndefined();
      const first = commit(ch, 1, 3, { chamberMemory: memory(true) });
      await store.chamberState.commitRun(first);
      expect(await store.chamberMemory.get(ch)).toEqual({ ...ch, sequence: 3, runId: 'run-3', committedAt: first.committedAt, memory: memory(true) });
      // A run that carries none (a dead letter, a skipped duplicate) leaves the stored one as it is.
      await store.chamberState.commitRun(commit(ch, 1, 4));
      await store.chamberState.commitRun(commit(ch, 1, 5, { recipe: 'recipe-B', chamberMemory: memory(true, false, true) }));
      expect(await store.chamberMemory.get(ch)).toMatchObject({ sequence: 5, runId: 'run-5', memory: memory(true, false, true) });
      const longest = Array.from({ length: CHAMBER_MEMORY_LIMITS.recentAlarms }, (_, i) => i % 3 === 0);
      await store.chamberState.commitRun(commit(ch, 1, 6, { chamberMemory: { recentAlarms: longest, fromFirstRun: false } }));
      expect((await store.chamberMemory.get(ch))?.memory).toEqual({ recentAlarms: longest, fromFirstRun: false });
      expect(await store.chamberMemory.get(freshChamber())).toBeUndefined();
    });

    it('a fenced commit, a replay and a duplicate run write no memory', async () => {
      const ch = freshChamber();
      await store.chamberState.commitRun(commit(ch, 1, 1, { chamberMemory: memory(false) }));
      await store.chamberState.claim(ch, 2, 'defender-2', T0);
      expect(await rejection(store.chamberState.commitRun(commit(ch, 1, 2, { chamberMemory: memory(true, true, true) })))).toBeInstanceOf(FencedError);
      expect((await store.chamberState.commitRun(commit(ch, 2, 1, { chamberMemory: memory(true, true) }))).outcome).toBe('already-applied');
      expect((await store.chamberState.commitRun(commit(ch, 2, 3, { runId: 'run-1', chamberMemory: memory(true) }))).outcome).toBe('duplicate-run');
      expect((await store.chamberMemory.get(ch))?.memory).toEqual(memory(false));
      expect((await store.chamberState.commitRun(commit(ch, 2, 4, { chamberMemory: memory(false, true) }))).outcome).toBe('applied');
      expect(await store.chamberMemory.get(ch)).toMatchObject({ sequence: 4, runId: 'run-4', memory: memory(false, true) });
    });

    it('rejects an invalid memory, writing nothing of the run', async () => {
      const ch = freshChamber();
      const invalid = { recentAlarms: [1], fromFirstRun: 'yes' } as unknown as ChamberMemory;
      const bad = await rejection(store.chamberState.commitRun(commit(ch, 1, 1, { chamberMemory: invalid })));
      expect(bad).toBeInstanceOf(InvalidRecordError);
      expect((bad as InvalidRecordError).issues.map((i) => i.path).sort()).toEqual(['chamberMemory.fromFirstRun', 'chamberMemory.recentAlarms']);
      expect(await store.uchart.run(ch, 1)).toBeUndefined();
      expect(await store.chamberMemory.get(ch)).toBeUndefined();
      expect(await rejection(store.chamberMemory.get({ toolId: 'a:b', chamberId: 'C' }))).toBeInstanceOf(InvalidRecordError);
    });
  });
}
