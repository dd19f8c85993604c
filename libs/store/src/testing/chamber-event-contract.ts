import { eventRunId, FencedError, InvalidRecordError, type ChamberEventInput, type ChamberRef, type DefenderStore, type EquipmentEvent, type MonitorState } from '@defender/contracts';
import { alarm, commit, freshChamber, points, rejection } from './fixtures';

const T0 = new Date(1_700_000_000_000);

function pm(chamber: ChamberRef, eventId: string, over: Partial<EquipmentEvent> = {}): EquipmentEvent {
  return { schema: 1, toolId: chamber.toolId, chamberId: chamber.chamberId, eventId, kind: 'pm', at: '2026-12-08T01:00:00.000Z', author: 'alice', ...over };
}

const judging = (mewma: number[] | null): MonitorState => ({ phase: 'judging', modelVersion: 1, judgedRuns: 7, extensionCheckAt: null, mewma, levelOffsets: { P: 0.5 } });

/** A commit of `event` at `sequence` (no points), changing `states`. */
function eventCommit(chamber: ChamberRef, epoch: number, sequence: number, event: EquipmentEvent, states: ChamberEventInput['monitorStates'] = []) {
  return commit(chamber, epoch, sequence, { runId: eventRunId(event.eventId), points: [], event: { event, monitorStates: states } });
}

/**
 * The contract of equipment events in the chamber's history (registered by `describeStoreContract`):
 * committed like a run at the event's stream sequence, with the monitor states it changes, fenced.
 */
export function describeChamberEventContract(storeOf: () => DefenderStore): void {
  describe('equipment events (committed at their sequence with the states they change)', () => {
    it('an event commit stores the event, replaces the states it carries, moves the mark; listed newest first', async () => {
      const store = storeOf();
      const ch = freshChamber();
      await store.chamberState.commitRun(commit(ch, 1, 1, { monitorState: judging([0.5, -1]) }));
      await store.chamberState.commitRun(commit(ch, 1, 2, { recipe: 'recipe-B', monitorState: judging([2]) }));
      const e3 = pm(ch, 'pm-1');
      const r = await store.chamberState.commitRun(eventCommit(ch, 1, 3, e3, [{ recipe: 'recipe-A', state: judging([0, 0]) }]));
      expect(r).toMatchObject({ outcome: 'applied', state: { highWaterMark: 3 } });
      // Its run has no points; the states it did not name stay as they were.
      expect(await store.uchart.run(ch, 3)).toMatchObject({ runId: 'event:pm-1', points: [] });
      expect((await store.monitorState.get(ch, 'recipe-A'))).toMatchObject({ sequence: 3, runId: 'event:pm-1', state: judging([0, 0]) });
      expect((await store.monitorState.get(ch, 'recipe-B'))).toMatchObject({ sequence: 2, state: judging([2]) });
      await store.chamberState.commitRun(commit(ch, 1, 4, { points: points(2, 4) }));
      const e5 = pm(ch, 'clean-1', { kind: 'clean', note: 'wet clean after the arcing' });
      await store.chamberState.commitRun(eventCommit(ch, 1, 5, e5));
      const listed = await store.chamberEvents.list(ch, { limit: 10 });
      expect(listed.map((l) => [l.sequence, l.runId, l.event])).toEqual([
        [5, 'event:clean-1', e5],
        [3, 'event:pm-1', e3],
      ]);
      expect((await store.chamberEvents.list(ch, { limit: 1 })).map((l) => l.sequence)).toEqual([5]);
      expect(await store.chamberEvents.list(freshChamber(), { limit: 10 })).toEqual([]);
    });

    it('an event published again is a duplicate; a replay and a fenced commit write nothing', async () => {
      const store = storeOf();
      const ch = freshChamber();
      const e = pm(ch, 'pm-7');
      await store.chamberState.commitRun(eventCommit(ch, 1, 1, e, [{ recipe: 'recipe-A', state: judging(null) }]));
      expect((await store.chamberState.commitRun(eventCommit(ch, 1, 1, e))).outcome).toBe('already-applied');
      expect(await store.chamberState.commitRun(eventCommit(ch, 1, 4, e))).toMatchObject({ outcome: 'duplicate-run', appliedSequence: 1, state: { highWaterMark: 4 } });
      await store.chamberState.claim(ch, 2, 'defender-2', T0);
      expect(await rejection(store.chamberState.commitRun(eventCommit(ch, 1, 5, pm(ch, 'pm-8'))))).toBeInstanceOf(FencedError);
      expect((await store.chamberEvents.list(ch, { limit: 10 })).map((l) => l.event.eventId)).toEqual(['pm-7']);
    });

    it('rejects an event commit with points, alarms, another run id, an invalid event or a recipe twice, writing nothing', async () => {
      const store = storeOf();
      const ch = freshChamber();
      const e = pm(ch, 'pm-9');
      const cases: [ReturnType<typeof eventCommit>, string][] = [
        [{ ...eventCommit(ch, 1, 1, e), points: points(1, 1) }, 'points'],
        [{ ...eventCommit(ch, 1, 1, e), alarms: [alarm('r', 'k')] }, 'alarms'],
        [{ ...eventCommit(ch, 1, 1, e), runId: 'run-1' }, 'runId'],
        [eventCommit(ch, 1, 1, { ...e, kind: 'lunch' as 'pm' }), 'event.event.kind'],
        [eventCommit(ch, 1, 1, { ...e, chamberId: 'OTHER' }), 'event.event'],
        [eventCommit(ch, 1, 1, e, [{ recipe: 'recipe-A', state: judging(null) }, { recipe: 'recipe-A', state: judging(null) }]), 'event.monitorStates[1].recipe'],
      ];
      for (const [input, path] of cases) {
        const bad = await rejection(store.chamberState.commitRun(input));
        expect(bad).toBeInstanceOf(InvalidRecordError);
        expect((bad as InvalidRecordError).issues.map((i) => i.path)).toContain(path);
      }
      expect(await store.uchart.run(ch, 1)).toBeUndefined();
      expect(await store.chamberEvents.list(ch, { limit: 10 })).toEqual([]);
      expect(await rejection(store.chamberEvents.list(ch, { limit: 0 }))).toBeInstanceOf(InvalidRecordError);
    });
  });
}
