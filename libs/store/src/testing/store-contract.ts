/**
 * The behaviour every store adapter must show, run against real backends by the adapters'
 * `*.int.spec.ts` files (Cassandra through the test harness, SQLite in memory and in a file).
 */
import {
  CorruptRecordError,
  FencedError,
  InvalidRecordError,
  SequenceConflictError,
  StoreClosedError,
  TornTraceError,
  TraceNotFoundError,
  UnknownSchemaVersionError,
  VersionConflictError,
  type ChamberRef,
  type CommitRunResult,
  type DefenderStore,
  type RunRef,
  type StrategyRecord,
} from '@defender/contracts';
import { encodePointSet } from '../lib/codec/point-set-codec';
import type { SeriesKind } from '../lib/codec/trace-codec';
import { alarm, bytesOf, commit, event, freshChamber, limitSet, points, rejection, sleep, trace } from './fixtures';
import { describeChamberEventContract } from './chamber-event-contract';
import { describeMonitorModelContract } from './monitor-model-contract';
import { describeRunMemoryContract } from './run-memory-contract';

/** Direct writes into an adapter's tables, to damage stored data the way a bug or a crash would. */
export interface StoreCorruptor {
  /** Stores a non-finite (NaN, or NULL where the backend cannot hold NaN) centre. */
  setLimitCenterNaN(store: DefenderStore, chamber: ChamberRef, indicatorKey: string, version: number): Promise<void>;
  /** Replaces a limit set's `params` JSON text. */
  setLimitParams(store: DefenderStore, chamber: ChamberRef, indicatorKey: string, version: number, params: string): Promise<void>;
  setRunBody(store: DefenderStore, chamber: ChamberRef, sequence: number, body: Buffer): Promise<void>;
  setStrategySchemaVersion(store: DefenderStore, scope: string, version: number, schemaVersion: number): Promise<void>;
  setAlarmBody(store: DefenderStore, chamber: ChamberRef, sequence: number, ruleId: string, indicatorKey: string, body: string): Promise<void>;
  deleteTraceChunk(store: DefenderStore, run: RunRef, kind: SeriesKind, series: string, chunk: number): Promise<void>;
  setTraceChunkData(store: DefenderStore, run: RunRef, kind: SeriesKind, series: string, chunk: number, data: Buffer): Promise<void>;
  setTraceChunkWriteId(store: DefenderStore, run: RunRef, kind: SeriesKind, series: string, chunk: number, writeId: string): Promise<void>;
  setTraceManifest(store: DefenderStore, run: RunRef, manifest: string): Promise<void>;
}

export interface StoreContractBackend {
  /** Opens a store on a fresh, empty database. */
  openFresh(): Promise<DefenderStore>;
  /** Opens a second connection to the database of `store`, as another process would. */
  openPeer(store: DefenderStore): Promise<DefenderStore>;
  readonly corrupt: StoreCorruptor;
  /** The trace chunk size the backend's stores write with (their default). */
  readonly traceChunkBytes: number;
}

const T0 = new Date(1_700_000_000_000);

/**
 * Registers the contract tests. `backend()` is called in `beforeAll` (so it may read servers the
 * harness started); stores it opens are closed after the suite.
 */
export function describeStoreContract(name: string, backend: () => StoreContractBackend): void {
  describe(`store contract: ${name}`, () => {
    let b: StoreContractBackend;
    let store: DefenderStore;
    const opened: DefenderStore[] = [];
    const fresh = async (): Promise<DefenderStore> => {
      const s = await b.openFresh();
      opened.push(s);
      return s;
    };
    const peer = async (of: DefenderStore): Promise<DefenderStore> => {
      const s = await b.openPeer(of);
      opened.push(s);
      return s;
    };

    beforeAll(async () => {
      b = backend();
      store = await fresh();
    }, 120_000);

    afterAll(async () => {
      for (const s of opened.reverse()) await s.close();
    }, 60_000);

    describe('chamber state and fencing', () => {
      it('claims a new chamber at high-water mark 0 and reads it back', async () => {
        const ch = freshChamber();
        expect(await store.chamberState.get(ch)).toBeUndefined();
        const st = await store.chamberState.claim(ch, 3, 'defender-3', T0);
        expect(st).toMatchObject({ ...ch, ownerEpoch: 3, ownerId: 'defender-3', highWaterMark: 0 });
        expect(await store.chamberState.get(ch)).toEqual(st);
        // same epoch again: the owner resuming after a restart
        expect(await store.chamberState.claim(ch, 3, 'defender-3', T0)).toMatchObject({ ownerEpoch: 3, highWaterMark: 0 });
      });

      it('rejects a claim with an older epoch (FencedError) and keeps the newer owner', async () => {
        const ch = freshChamber();
        await store.chamberState.claim(ch, 5, 'defender-5', T0);
        const err = await rejection(store.chamberState.claim(ch, 4, 'defender-4', T0));
        expect(err).toBeInstanceOf(FencedError);
        expect(err).toMatchObject({ callerEpoch: 4, storedEpoch: 5, storedOwnerId: 'defender-5', chamber: ch });
        expect(await store.chamberState.get(ch)).toMatchObject({ ownerEpoch: 5, ownerId: 'defender-5' });
      });

      it('commits a run: points, high-water mark and epoch move together', async () => {
        const ch = freshChamber();
        await store.chamberState.claim(ch, 1, 'defender-1', T0);
        const input = commit(ch, 1, 7, { points: points(12, 7) });
        const res = await store.chamberState.commitRun(input);
        expect(res.outcome).toBe('applied');
        expect(res.state).toMatchObject({ ownerEpoch: 1, highWaterMark: 7, ownerId: 'defender-1' });
        expect(await store.chamberState.get(ch)).toEqual(res.state);
        const run = await store.uchart.run(ch, 7);
        expect(run).toEqual({ ...ch, sequence: 7, runId: 'run-7', epoch: 1, committedAt: input.committedAt, recipe: 'recipe-A', points: input.points });
      });

      it('commits without a prior claim (the commit creates the state)', async () => {
        const ch = freshChamber();
        const res = await store.chamberState.commitRun(commit(ch, 2, 1));
        expect(res).toMatchObject({ outcome: 'applied', state: { ownerEpoch: 2, highWaterMark: 1 } });
      });

      it('returns already-applied for a replay and writes nothing twice', async () => {
        const ch = freshChamber();
        const input = commit(ch, 1, 3, { alarms: [alarm('nelson-1', 'k1')] });
        expect((await store.chamberState.commitRun(input)).outcome).toBe('applied');
        const again = await store.chamberState.commitRun({ ...input, points: points(5, 99) });
        expect(again.outcome).toBe('already-applied');
        expect(again.state).toMatchObject({ highWaterMark: 3, ownerEpoch: 1 });
        const history = await store.uchart.history(ch, { limit: 10 });
        expect(history.map((r) => r.sequence)).toEqual([3]);
        expect(history[0]?.points).toEqual(input.points);
        expect(await store.alarms.ofRun(ch, 3)).toHaveLength(1);
      });

      it('accepts gaps in the sequence (stream sequences are shared by all chambers)', async () => {
        const ch = freshChamber();
        for (const seq of [5, 9, 1000]) expect((await store.chamberState.commitRun(commit(ch, 1, seq))).outcome).toBe('applied');
        expect((await store.uchart.history(ch, { limit: 10 })).map((r) => r.sequence)).toEqual([5, 9, 1000]);
      });

      it('raises SequenceConflictError for a sequence at or below the high-water mark that holds another run or none', async () => {
        const ch = freshChamber();
        await store.chamberState.commitRun(commit(ch, 1, 10));
        const other = await rejection(store.chamberState.commitRun(commit(ch, 1, 10, { runId: 'another-run' })));
        expect(other).toBeInstanceOf(SequenceConflictError);
        expect(other).toMatchObject({ sequence: 10, runId: 'another-run', storedRunId: 'run-10', highWaterMark: 10 });
        const below = await rejection(store.chamberState.commitRun(commit(ch, 1, 4)));
        expect(below).toBeInstanceOf(SequenceConflictError);
        expect(below).toMatchObject({ sequence: 4, storedRunId: null });
        expect((await store.uchart.history(ch, { limit: 10 })).map((r) => r.runId)).toEqual(['run-10']);
      });

      it("rejects a deposed owner's late write: nothing of it becomes visible", async () => {
        const ch = freshChamber();
        await store.chamberState.claim(ch, 1, 'defender-a', T0);
        await store.chamberState.commitRun(commit(ch, 1, 1));
        await store.chamberState.claim(ch, 2, 'defender-b', T0);
        const late = await rejection(store.chamberState.commitRun(commit(ch, 1, 2, { alarms: [alarm('r', 'k')], hold: { holdId: 'h', ruleId: 'r', reason: 'x' } })));
        expect(late).toBeInstanceOf(FencedError);
        expect(late).toMatchObject({ callerEpoch: 1, storedEpoch: 2, storedOwnerId: 'defender-b' });
        expect(await store.uchart.run(ch, 2)).toBeUndefined();
        expect(await store.alarms.ofRun(ch, 2)).toEqual([]);
        expect(await store.alarms.hold(ch)).toBeNull();
        expect(await store.chamberState.get(ch)).toMatchObject({ ownerEpoch: 2, ownerId: 'defender-b', highWaterMark: 1 });
        // The new owner resumes from the high-water mark and applies seq 2 itself.
        expect((await store.chamberState.commitRun(commit(ch, 2, 2))).outcome).toBe('applied');
        // ...and the old owner stays fenced for every sequence, old or new.
        for (const seq of [1, 2, 3]) expect(await rejection(store.chamberState.commitRun(commit(ch, 1, seq)))).toBeInstanceOf(FencedError);
      });

      it('a commit with a newer epoch fences older owners without a claim', async () => {
        const ch = freshChamber();
        await store.chamberState.commitRun(commit(ch, 1, 1));
        await store.chamberState.commitRun(commit(ch, 4, 2));
        expect(await rejection(store.chamberState.commitRun(commit(ch, 3, 3)))).toBeInstanceOf(FencedError);
      });

      it('two owners racing on one chamber from two connections: exactly one commit per sequence, the stale owner always loses', async () => {
        const ch = freshChamber();
        const a = store;
        const bStore = await peer(store);
        const N = 40;
        await a.chamberState.claim(ch, 1, 'owner-a', T0);
        type Outcome = CommitRunResult['outcome'] | 'fenced';
        const results: { owner: 'a' | 'b'; seq: number; outcome: Outcome; afterClaimB: boolean }[] = [];
        let bClaimed = false;
        const attempt = async (s: DefenderStore, owner: 'a' | 'b', epoch: number, seq: number): Promise<void> => {
          const afterClaimB = bClaimed;
          try {
            const r = await s.chamberState.commitRun(commit(ch, epoch, seq, { ownerId: `owner-${owner}` }));
            results.push({ owner, seq, outcome: r.outcome, afterClaimB });
          } catch (err) {
            if (!(err instanceof FencedError)) throw err;
            results.push({ owner, seq, outcome: 'fenced', afterClaimB });
          }
        };
        const ownerA = async (): Promise<void> => {
          for (let seq = 1; seq <= N; seq++) {
            await attempt(a, 'a', 1, seq);
            await sleep(2); // paced like a worker between runs, so the takeover lands mid-stream
          }
        };
        const ownerB = async (): Promise<void> => {
          // Take over mid-stream, as a new owner after a crash detection would.
          while (((await bStore.chamberState.get(ch))?.highWaterMark ?? 0) < 8) await sleep(1);
          const st = await bStore.chamberState.claim(ch, 2, 'owner-b', T0);
          bClaimed = true;
          // Resume a little before the high-water mark: redeliveries of already applied runs.
          for (let seq = Math.max(1, st.highWaterMark - 2); seq <= N; seq++) await attempt(bStore, 'b', 2, seq);
        };
        await Promise.all([ownerA(), ownerB()]);

        for (let seq = 1; seq <= N; seq++) {
          expect({ seq, applied: results.filter((r) => r.seq === seq && r.outcome === 'applied').length }).toEqual({ seq, applied: 1 });
        }
        expect(results.some((r) => r.owner === 'a' && r.outcome === 'fenced')).toBe(true); // the race really happened
        expect(results.filter((r) => r.owner === 'a' && r.afterClaimB && r.outcome !== 'fenced')).toEqual([]);
        expect(results.filter((r) => r.owner === 'b' && r.outcome === 'fenced')).toEqual([]);
        const history = await a.uchart.history(ch, { limit: 1000 });
        expect(history.map((r) => r.sequence)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
        const epochs = history.map((r) => r.epoch);
        expect(epochs).toEqual([...epochs].sort((x, y) => x - y)); // once epoch 2 wrote, epoch 1 never did again
        expect(await a.chamberState.get(ch)).toMatchObject({ ownerEpoch: 2, ownerId: 'owner-b', highWaterMark: N });
        expect(await rejection(a.chamberState.commitRun(commit(ch, 1, N + 1)))).toBeInstanceOf(FencedError);
      }, 120_000);

      it('the same run committed concurrently is applied once', async () => {
        const ch = freshChamber();
        const other = await peer(store);
        const input = commit(ch, 1, 1);
        const outcomes = await Promise.all([store, other, store, other, store].map((s) => s.chamberState.commitRun(input)));
        expect(outcomes.map((o) => o.outcome).sort()).toEqual(['already-applied', 'already-applied', 'already-applied', 'already-applied', 'applied']);
        expect(await store.uchart.history(ch, { limit: 10 })).toHaveLength(1);
      }, 60_000);

      it('rejects invalid commits with every problem listed, writing nothing', async () => {
        const ch = freshChamber();
        const err = await rejection(
          store.chamberState.commitRun(commit(ch, -1, 0, { points: [{ indicatorKey: 'k', value: NaN, flags: 0 }, { indicatorKey: 'k', value: 1, flags: 0 }] })),
        );
        expect(err).toBeInstanceOf(InvalidRecordError);
        expect((err as InvalidRecordError).issues.map((i) => i.path)).toEqual(['epoch', 'sequence', 'points[0].value', 'points[1].indicatorKey']);
        expect(await store.chamberState.get(ch)).toBeUndefined();
      });
    });

    describe('applied run ids (a replay of any age is skipped)', () => {
      it('a run id applied before, notified again at a new sequence, is a duplicate-run: nothing written, the mark moves on', async () => {
        const ch = freshChamber();
        await store.chamberState.commitRun(commit(ch, 1, 10, { alarms: [alarm('nelson-1', 'k1')], events: [event(ch, 10, 0)] }));
        expect(await store.chamberState.appliedRun(ch, 'run-10')).toBe(10);
        expect(await store.chamberState.appliedRun(ch, 'run-11')).toBeUndefined();

        // The same run id re-published into the stream (new sequence), with different results.
        const replay = commit(ch, 1, 15, { runId: 'run-10', points: points(4, 15), alarms: [alarm('nelson-2', 'k2')], events: [event(ch, 15, 0)] });
        const res = await store.chamberState.commitRun(replay);
        expect(res).toMatchObject({ outcome: 'duplicate-run', appliedSequence: 10, state: { highWaterMark: 15, ownerEpoch: 1 } });
        expect((await store.chamberState.get(ch))?.highWaterMark).toBe(15);
        // Retried (outcome unknown) and seen again below the mark: the same answer, nothing moves back.
        expect(await store.chamberState.commitRun(replay)).toMatchObject({ outcome: 'duplicate-run', appliedSequence: 10, state: { highWaterMark: 15 } });
        expect(await store.chamberState.commitRun(commit(ch, 1, 12, { runId: 'run-10' }))).toMatchObject({ outcome: 'duplicate-run', state: { highWaterMark: 15 } });

        expect((await store.uchart.history(ch, { limit: 10 })).map((r) => [r.sequence, r.runId])).toEqual([[10, 'run-10']]);
        expect(await store.alarms.list(ch, { limit: 10 })).toHaveLength(1);
        expect((await store.outbox.pending(ch, { limit: 10 })).map((e) => e.sequence)).toEqual([10]);
        // The chamber goes on after it.
        expect((await store.chamberState.commitRun(commit(ch, 1, 16))).outcome).toBe('applied');
        expect((await store.uchart.history(ch, { limit: 10 })).map((r) => r.sequence)).toEqual([10, 16]);
      });

      it('a duplicate-run is fenced like any commit', async () => {
        const ch = freshChamber();
        await store.chamberState.commitRun(commit(ch, 1, 1));
        await store.chamberState.claim(ch, 2, 'defender-2', T0);
        expect(await rejection(store.chamberState.commitRun(commit(ch, 1, 5, { runId: 'run-1' })))).toBeInstanceOf(FencedError);
        expect((await store.chamberState.get(ch))?.highWaterMark).toBe(1);
      });
    });

    describe('stream binding (a mark counts in one stream; ADR 0007)', () => {
      it('a new chamber has no stream; its owner binds one, and a mark without one adopts the stream once', async () => {
        const ch = freshChamber();
        await store.chamberState.claim(ch, 1, 'defender-1', T0);
        await store.chamberState.commitRun(commit(ch, 1, 7));
        expect((await store.chamberState.get(ch))?.streamId).toBeUndefined();
        const bound = await store.chamberState.bindStream({ chamber: ch, epoch: 1, expectedStreamId: undefined, streamId: 'stream-a', rebase: false });
        expect(bound).toMatchObject({ highWaterMark: 7, streamId: 'stream-a' });
        expect(bound.streamOffset ?? 0).toBe(0);
        expect(await store.chamberState.get(ch)).toEqual(bound);
        // A claim keeps the binding.
        expect(await store.chamberState.claim(ch, 2, 'defender-2', T0)).toMatchObject({ highWaterMark: 7, streamId: 'stream-a' });
      });

      it('a re-base onto a recreated stream keeps the mark and sets the offset to it; run ids applied before stay duplicates', async () => {
        const ch = freshChamber();
        await store.chamberState.claim(ch, 1, 'defender-1', T0);
        await store.chamberState.bindStream({ chamber: ch, epoch: 1, expectedStreamId: undefined, streamId: 'stream-a', rebase: false });
        await store.chamberState.commitRun(commit(ch, 1, 40));
        const rebased = await store.chamberState.bindStream({ chamber: ch, epoch: 1, expectedStreamId: 'stream-a', streamId: 'stream-b', rebase: true });
        expect(rebased).toMatchObject({ highWaterMark: 40, streamId: 'stream-b', streamOffset: 40 });
        expect(await store.chamberState.get(ch)).toEqual(rebased);
        // The new stream's sequence 1 is the store's 41: the applied run comes back as a duplicate, a new one applies.
        expect((await store.chamberState.commitRun(commit(ch, 1, 41, { runId: 'run-40' }))).outcome).toBe('duplicate-run');
        expect((await store.chamberState.commitRun(commit(ch, 1, 42))).outcome).toBe('applied');
        // A second recreation: the offset grows with the mark, never back.
        const again = await store.chamberState.bindStream({ chamber: ch, epoch: 1, expectedStreamId: 'stream-b', streamId: 'stream-c', rebase: true });
        expect(again).toMatchObject({ highWaterMark: 42, streamId: 'stream-c', streamOffset: 42 });
      });

      it('a binding is fenced, and only moves from the stream the caller saw', async () => {
        const ch = freshChamber();
        await store.chamberState.claim(ch, 1, 'defender-1', T0);
        await store.chamberState.bindStream({ chamber: ch, epoch: 1, expectedStreamId: undefined, streamId: 'stream-a', rebase: false });
        await store.chamberState.commitRun(commit(ch, 1, 5));
        // Another owner saw no stream (or an older one): the stored binding wins, nothing changes.
        const stale = await store.chamberState.bindStream({ chamber: ch, epoch: 1, expectedStreamId: undefined, streamId: 'stream-x', rebase: true });
        expect(stale).toMatchObject({ streamId: 'stream-a', highWaterMark: 5 });
        expect(stale.streamOffset ?? 0).toBe(0);
        await store.chamberState.claim(ch, 2, 'defender-2', T0);
        expect(await rejection(store.chamberState.bindStream({ chamber: ch, epoch: 1, expectedStreamId: 'stream-a', streamId: 'stream-b', rebase: true }))).toBeInstanceOf(FencedError);
        expect(await store.chamberState.get(ch)).toMatchObject({ streamId: 'stream-a', ownerEpoch: 2 });
      });
    });

    describe('outbox', () => {
      it('keeps a run\'s events in order until marked published; a replay adds none', async () => {
        const ch = freshChamber();
        const first = [event(ch, 3, 0), event(ch, 3, 1, 'defense.holds'), event(ch, 3, 2)];
        await store.chamberState.commitRun(commit(ch, 1, 3, { events: first }));
        await store.chamberState.commitRun(commit(ch, 1, 3, { events: [event(ch, 3, 9)] })); // replay
        await store.chamberState.commitRun(commit(ch, 1, 4)); // no events
        await store.chamberState.commitRun(commit(ch, 1, 7, { events: [event(ch, 7, 0)] }));
        expect(await store.outbox.publishedThrough(ch)).toBe(0);
        const pending = await store.outbox.pending(ch, { limit: 100 });
        expect(pending).toEqual([...first.map((e, index) => ({ ...ch, sequence: 3, index, ...e })), { ...ch, sequence: 7, index: 0, ...event(ch, 7, 0) }]);
        expect(await store.outbox.pending(ch, { limit: 2 })).toEqual(pending.slice(0, 2));

        await store.outbox.markPublished(ch, 1, 3);
        expect(await store.outbox.publishedThrough(ch)).toBe(3);
        expect(await store.outbox.pending(ch, { limit: 100 })).toEqual(pending.slice(3));
        await store.outbox.markPublished(ch, 1, 2); // never lowers
        expect(await store.outbox.publishedThrough(ch)).toBe(3);
        await store.outbox.markPublished(ch, 1, 7);
        expect(await store.outbox.pending(ch, { limit: 100 })).toEqual([]);
      });

      it('a deposed owner cannot move the mark; the new owner sees what is still pending', async () => {
        const ch = freshChamber();
        await store.chamberState.commitRun(commit(ch, 1, 5, { events: [event(ch, 5, 0)] }));
        await store.chamberState.claim(ch, 2, 'defender-2', T0);
        expect(await rejection(store.outbox.markPublished(ch, 1, 5))).toBeInstanceOf(FencedError);
        expect(await store.outbox.publishedThrough(ch)).toBe(0);
        expect((await store.outbox.pending(ch, { limit: 10 })).map((e) => e.msgId)).toEqual([event(ch, 5, 0).msgId]);
        await store.outbox.markPublished(ch, 2, 5);
        expect(await store.outbox.pending(ch, { limit: 10 })).toEqual([]);
      });

      it('a fenced commit leaves no event behind', async () => {
        const ch = freshChamber();
        await store.chamberState.claim(ch, 2, 'defender-2', T0);
        expect(await rejection(store.chamberState.commitRun(commit(ch, 1, 1, { events: [event(ch, 1, 0)] })))).toBeInstanceOf(FencedError);
        expect(await store.outbox.pending(ch, { limit: 10 })).toEqual([]);
      });
    });

    describeRunMemoryContract(() => store);
    describeMonitorModelContract(() => store);
    describeChamberEventContract(() => store);

    describe('alarms and holds', () => {
      it('stores alarms with their run, unique per (run, rule, indicator), newest first', async () => {
        const ch = freshChamber();
        const a1 = alarm('nelson-1', 'k2');
        const a2 = alarm('nelson-1', 'k1', { value: null, lcl: undefined, ucl: undefined, center: undefined, details: undefined });
        const a3 = alarm('spec-high', 'k1', { action: 'HOLD_CHAMBER' });
        await store.chamberState.commitRun(commit(ch, 1, 1, { alarms: [a1, a2] }));
        await store.chamberState.commitRun(commit(ch, 1, 2, { alarms: [a3] }));
        await store.chamberState.commitRun(commit(ch, 1, 2, { alarms: [a3, alarm('extra', 'k9')] })); // replay
        const run1 = await store.alarms.ofRun(ch, 1);
        expect(run1.map((a) => [a.ruleId, a.indicatorKey])).toEqual([
          ['nelson-1', 'k1'],
          ['nelson-1', 'k2'],
        ]);
        const stored1 = run1[1];
        expect(stored1).toEqual({ ...a1, ...ch, sequence: 1, runId: 'run-1', epoch: 1, raisedAt: commit(ch, 1, 1).committedAt });
        expect(run1[0]).toEqual({
          ruleId: 'nelson-1',
          indicatorKey: 'k1',
          action: 'ALARM',
          value: null,
          recipe: 'recipe-A',
          step: 'main',
          svid: 'svid-1',
          statistic: 'mean',
          message: a2.message,
          ...ch,
          sequence: 1,
          runId: 'run-1',
          epoch: 1,
          raisedAt: commit(ch, 1, 1).committedAt,
        });
        const newest = await store.alarms.list(ch, { limit: 10 });
        expect(newest.map((a) => [a.sequence, a.ruleId, a.indicatorKey])).toEqual([
          [2, 'spec-high', 'k1'],
          [1, 'nelson-1', 'k1'],
          [1, 'nelson-1', 'k2'],
        ]);
        expect(await store.alarms.list(ch, { limit: 1 })).toHaveLength(1);
      });

      it('places a hold with a run and releases exactly that hold', async () => {
        const ch = freshChamber();
        expect(await store.alarms.hold(ch)).toBeNull();
        await store.chamberState.commitRun(commit(ch, 1, 1, { hold: { holdId: 'hold-1', ruleId: 'escalation:2-of-5', reason: '2 alarms in 5 runs' } }));
        await store.chamberState.commitRun(commit(ch, 1, 2)); // a later run without a hold keeps it
        expect(await store.alarms.hold(ch)).toEqual({
          ...ch,
          holdId: 'hold-1',
          ruleId: 'escalation:2-of-5',
          reason: '2 alarms in 5 runs',
          sequence: 1,
          runId: 'run-1',
          heldAt: commit(ch, 1, 1).committedAt,
        });
        expect(await store.alarms.releaseHold(ch, 'hold-0')).toBe(false);
        expect(await store.alarms.releaseHold(ch, 'hold-1')).toBe(true);
        expect(await store.alarms.hold(ch)).toBeNull();
        expect(await store.alarms.releaseHold(ch, 'hold-1')).toBe(false);
        expect(await store.alarms.releaseHold(freshChamber(), 'hold-1')).toBe(false);
      });
    });

    describe('U-chart history', () => {
      it('returns the newest committed runs oldest first, with every point field intact', async () => {
        const ch = freshChamber();
        const inputs = [3, 4, 6, 8, 11].map((seq) => commit(ch, 1, seq, { points: points(50, seq) }));
        for (const i of inputs) await store.chamberState.commitRun(i);
        const last3 = await store.uchart.history(ch, { limit: 3 });
        expect(last3.map((r) => r.sequence)).toEqual([6, 8, 11]);
        expect(last3.map((r) => r.points)).toEqual(inputs.slice(2).map((i) => i.points));
        expect((await store.uchart.history(ch, { limit: 2, beforeSequence: 8 })).map((r) => r.sequence)).toEqual([4, 6]);
        expect(await store.uchart.history(freshChamber(), { limit: 5 })).toEqual([]);
        expect(await store.uchart.run(ch, 5)).toBeUndefined();
      });

      it('stores a run without points and runs without a recipe', async () => {
        const ch = freshChamber();
        await store.chamberState.commitRun(commit(ch, 1, 1, { points: [], recipe: undefined }));
        const [run] = await store.uchart.history(ch, { limit: 1 });
        expect(run).toEqual({ ...ch, sequence: 1, runId: 'run-1', epoch: 1, committedAt: commit(ch, 1, 1).committedAt, points: [] });
      });
    });

    describe('limit sets', () => {
      it('stores versions insert-only: created, unchanged on an identical re-write, conflict otherwise', async () => {
        const ch = freshChamber();
        expect(await store.uchart.putLimitSet(limitSet(ch, 'k1', 1))).toBe('created');
        expect(await store.uchart.putLimitSet(limitSet(ch, 'k1', 1))).toBe('unchanged');
        const err = await rejection(store.uchart.putLimitSet(limitSet(ch, 'k1', 1, { center: 99 })));
        expect(err).toBeInstanceOf(VersionConflictError);
        expect((err as VersionConflictError).context).toMatchObject({ chamber: ch, indicatorKey: 'k1', version: 1 });
        expect(await store.uchart.limitSet(ch, 'k1')).toEqual(limitSet(ch, 'k1', 1));
      });

      it('reads the current version per indicator, a given version, and the history', async () => {
        const ch = freshChamber();
        const attr = limitSet(ch, 'defects', 1, { chartType: 'u', sigma: null, lcl: null, ucl: null, params: { nSigma: 3 } });
        for (const l of [limitSet(ch, 'k2', 1), limitSet(ch, 'k2', 2), limitSet(ch, 'k1', 1), attr, limitSet(ch, 'k2', 3)]) await store.uchart.putLimitSet(l);
        expect((await store.uchart.currentLimitSets(ch)).map((l) => [l.indicatorKey, l.version])).toEqual([
          ['defects', 1],
          ['k1', 1],
          ['k2', 3],
        ]);
        expect(await store.uchart.limitSet(ch, 'defects')).toEqual(attr);
        expect(await store.uchart.limitSet(ch, 'k2', 2)).toEqual(limitSet(ch, 'k2', 2));
        expect(await store.uchart.limitSet(ch, 'k2', 9)).toBeUndefined();
        expect(await store.uchart.limitSet(ch, 'nope')).toBeUndefined();
        expect((await store.uchart.limitSetHistory(ch, 'k2')).map((l) => l.version)).toEqual([1, 2, 3]);
      });

      it('refuses NaN limits on write', async () => {
        const ch = freshChamber();
        expect(await rejection(store.uchart.putLimitSet(limitSet(ch, 'k', 1, { center: NaN })))).toBeInstanceOf(InvalidRecordError);
        expect(await store.uchart.limitSet(ch, 'k')).toBeUndefined();
      });
    });

    describe('strategies', () => {
      const doc = (v: number) => ({ indicators: [{ svid: 'P1', statistic: 'mean', window: { kind: 'step', name: 'main' } }], rules: ['nelson-1', 'nelson-2'], version: v, nested: { a: [1, 2.5, null, true, 'x'] } });

      it('stores versioned JSON documents and reads the latest or a given version', async () => {
        const scope = `chamber/${freshChamber().toolId}:C1`;
        const s1: StrategyRecord = { scope, version: 1, document: doc(1), createdAt: T0, author: 'alice' };
        const s2: StrategyRecord = { scope, version: 2, document: doc(2), createdAt: new Date(T0.getTime() + 1), author: '' };
        expect(await store.strategies.put(s1)).toBe('created');
        expect(await store.strategies.put(s2)).toBe('created');
        expect(await store.strategies.put(s1)).toBe('unchanged');
        expect(await rejection(store.strategies.put({ ...s1, document: doc(7) }))).toBeInstanceOf(VersionConflictError);
        expect(await store.strategies.get(scope)).toEqual(s2);
        expect(await store.strategies.get(scope, 1)).toEqual(s1);
        expect(await store.strategies.get(scope, 3)).toBeUndefined();
        expect(await store.strategies.versions(scope)).toEqual([1, 2]);
        expect(await store.strategies.versions(`${scope}-none`)).toEqual([]);
      });

      it('latest: the newest version of each given scope that has one, in the given order, in one call', async () => {
        const tool = freshChamber().toolId;
        const chamberRecipe = `chamber/${tool}:C1/recipe/R`;
        const chamber = `chamber/${tool}:C1`;
        const legacy = `${tool}:C1`;
        const recipe = `recipe/${tool}-R`;
        const at = (scope: string, version: number): StrategyRecord => ({ scope, version, document: doc(version), createdAt: new Date(T0.getTime() + version), author: 'ops' });
        for (const r of [at(recipe, 1), at(chamber, 1), at(chamber, 2), at(chamber, 3), at(legacy, 1)]) await store.strategies.put(r);
        // Order of the arguments, not of the store (partitions come back in token order in Cassandra).
        expect(await store.strategies.latest([chamberRecipe, chamber, legacy, recipe])).toEqual([at(chamber, 3), at(legacy, 1), at(recipe, 1)]);
        expect(await store.strategies.latest([recipe, legacy, chamber])).toEqual([at(recipe, 1), at(legacy, 1), at(chamber, 3)]);
        expect(await store.strategies.latest([chamberRecipe])).toEqual([]);
        // A version written later is the newest at once.
        await store.strategies.put(at(chamberRecipe, 1));
        expect((await store.strategies.latest([chamberRecipe, chamber])).map((r) => [r.scope, r.version])).toEqual([
          [chamberRecipe, 1],
          [chamber, 3],
        ]);
      });

      it('latest refuses an empty, oversized, duplicated or malformed scope list with every problem listed', async () => {
        const err = await rejection(store.strategies.latest(['default', 'not a scope', 'default']));
        expect(err).toBeInstanceOf(InvalidRecordError);
        expect((err as InvalidRecordError).issues.map((i) => i.path)).toEqual(['scopes[1]', 'scopes[2]']);
        expect(await rejection(store.strategies.latest([]))).toBeInstanceOf(InvalidRecordError);
        expect(await rejection(store.strategies.latest(Array.from({ length: 17 }, (_, i) => `recipe/r${i}`)))).toBeInstanceOf(InvalidRecordError);
      });
    });

    describe('traces', () => {
      it('round-trips a trace bit for bit: element types, NaN gaps, SVID order, timing, steps', async () => {
        const ch = freshChamber();
        const t = trace(ch, 'run-1', 7, 5_000);
        const summary = await store.traces.write(t);
        expect(summary).toEqual({ length: 5_000, svidCount: 7, chunks: 7, bytes: 4 * 5_000 * 8 + 3 * 5_000 * 4 });
        const back = await store.traces.read(t);
        expect([...back.svids.keys()]).toEqual([...t.svids.keys()]);
        for (const [name, a] of t.svids) {
          const b2 = back.svids.get(name);
          expect(b2?.constructor).toBe(a.constructor);
          expect(b2 && bytesOf(b2).equals(bytesOf(a))).toBe(true);
        }
        expect({ ...back, svids: undefined }).toEqual({ ...t, svids: undefined });
      });

      it('round-trips explicit sample times and a multi-chunk series', async () => {
        const ch = freshChamber();
        const t = trace(ch, 'run-2', 2, 300_000, { dtype: 'f64', explicit: true });
        const summary = await store.traces.write(t);
        expect(summary.chunks).toBe(3 * Math.ceil((300_000 * 8) / b.traceChunkBytes));
        const back = await store.traces.read(t);
        expect(back.timing.kind).toBe('explicit');
        if (back.timing.kind === 'explicit' && t.timing.kind === 'explicit') {
          expect(bytesOf(back.timing.timesSeconds).equals(bytesOf(t.timing.timesSeconds))).toBe(true);
        }
        for (const [name, a] of t.svids) expect(bytesOf(back.svids.get(name) as Float64Array).equals(bytesOf(a))).toBe(true);
      }, 60_000);

      it('a re-write replaces the trace, also with fewer and shorter series', async () => {
        const ch = freshChamber();
        await store.traces.write(trace(ch, 'run-3', 3, 200_000, { dtype: 'f64' }));
        const smaller = trace(ch, 'run-3', 1, 10, { dtype: 'f32', seed: 7 });
        await store.traces.write(smaller);
        const back = await store.traces.read(smaller);
        expect([...back.svids.keys()]).toEqual([...smaller.svids.keys()]);
        expect(bytesOf(back.svids.values().next().value as Float32Array).equals(bytesOf(smaller.svids.values().next().value as Float32Array))).toBe(true);
      }, 60_000);

      it('stores an empty trace', async () => {
        const ch = freshChamber();
        const t = trace(ch, 'run-empty', 2, 0);
        await store.traces.write(t);
        const back = await store.traces.read(t);
        expect([...back.svids.values()].map((a) => a.length)).toEqual([0, 0]);
      });

      it('reports a missing trace, and deletes', async () => {
        const ch = freshChamber();
        const t = trace(ch, 'run-4', 1, 10);
        expect(await rejection(store.traces.read(t))).toBeInstanceOf(TraceNotFoundError);
        await store.traces.write(t);
        await store.traces.delete(t);
        expect(await rejection(store.traces.read(t))).toBeInstanceOf(TraceNotFoundError);
      });

      describe('a torn or damaged trace is an error naming the chunk, never zeros', () => {
        const svid = 'svid-000-pressure';
        const setup = async (runId: string): Promise<RunRef> => {
          const ch = freshChamber();
          const t = trace(ch, runId, 2, 300_000, { dtype: 'f64' });
          await store.traces.write(t);
          return { ...ch, runId };
        };

        it('missing chunk', async () => {
          const run = await setup('torn-missing');
          await b.corrupt.deleteTraceChunk(store, run, 1, svid, 1);
          const err = await rejection(store.traces.read(run));
          expect(err).toBeInstanceOf(TornTraceError);
          expect(err).toMatchObject({ kind: 'missing-chunk', context: { runId: 'torn-missing', series: svid, chunk: 1 } });
        }, 60_000);

        it('truncated chunk', async () => {
          const run = await setup('torn-short');
          await b.corrupt.setTraceChunkData(store, run, 1, svid, 0, Buffer.alloc(1000, 1));
          const err = await rejection(store.traces.read(run));
          expect(err).toBeInstanceOf(TornTraceError);
          expect(err).toMatchObject({ kind: 'truncated', context: { series: svid, chunk: 0, column: 'data' } });
        }, 60_000);

        it('damaged chunk (checksum)', async () => {
          const run = await setup('torn-crc');
          const full = await store.traces.read(run);
          const bytes = Buffer.from(bytesOf(full.svids.get(svid) as Float64Array).subarray(b.traceChunkBytes, 2 * b.traceChunkBytes));
          bytes[12345] = (bytes[12345] as number) ^ 0xff;
          await b.corrupt.setTraceChunkData(store, run, 1, svid, 1, bytes);
          const err = await rejection(store.traces.read(run));
          expect(err).toBeInstanceOf(TornTraceError);
          expect(err).toMatchObject({ kind: 'checksum-mismatch', context: { series: svid, chunk: 1 } });
        }, 60_000);

        it('chunk of another write', async () => {
          const run = await setup('torn-write');
          await b.corrupt.setTraceChunkWriteId(store, run, 1, svid, 2, 'some-older-write');
          const err = await rejection(store.traces.read(run));
          expect(err).toBeInstanceOf(TornTraceError);
          expect(err).toMatchObject({ kind: 'torn-write', context: { series: svid, chunk: 2 } });
        }, 60_000);

        it('malformed manifest, unknown manifest version', async () => {
          const run = await setup('torn-manifest');
          await b.corrupt.setTraceManifest(store, run, '{"v":1,"writeId":"x","len');
          const malformed = await rejection(store.traces.read(run));
          expect(malformed).toBeInstanceOf(CorruptRecordError);
          expect(malformed).toMatchObject({ kind: 'malformed', context: { runId: 'torn-manifest', column: 'manifest' } });
          await b.corrupt.setTraceManifest(store, run, '{"v":2}');
          const future = await rejection(store.traces.read(run));
          expect(future).toBeInstanceOf(UnknownSchemaVersionError);
          expect(future).toMatchObject({ found: 2, context: { column: 'manifest' } });
        }, 60_000);
      });
    });

    describe('bad stored data raises typed errors with context', () => {
      it('NaN limits', async () => {
        const ch = freshChamber();
        await store.uchart.putLimitSet(limitSet(ch, 'k1', 1));
        await b.corrupt.setLimitCenterNaN(store, ch, 'k1', 1);
        for (const read of [() => store.uchart.limitSet(ch, 'k1'), () => store.uchart.currentLimitSets(ch), () => store.uchart.limitSetHistory(ch, 'k1')]) {
          const err = await rejection(read());
          expect(err).toBeInstanceOf(CorruptRecordError);
          expect(err).toMatchObject({ kind: 'invalid-value', context: { chamber: ch, indicatorKey: 'k1', version: 1, column: 'center' } });
        }
      });

      it('limit-set params that are not a JSON object (decoded where the record is used: on the caller side of a store thread)', async () => {
        const ch = freshChamber();
        await store.uchart.putLimitSet(limitSet(ch, 'k1', 1, { params: { model: { center: [1, 2, 3] } } }));
        await store.uchart.putLimitSet(limitSet(ch, 'k2', 1));
        expect((await store.uchart.currentLimitSets(ch)).map((l) => l.params)).toEqual([{ model: { center: [1, 2, 3] } }, expect.any(Object)]);
        for (const [text, message] of [
          ['{"model":{"center":[1,2', /not valid JSON/],
          ['[1,2,3]', /expected a JSON object/],
        ] as const) {
          await b.corrupt.setLimitParams(store, ch, 'k1', 1, text);
          for (const read of [() => store.uchart.limitSet(ch, 'k1'), () => store.uchart.currentLimitSets(ch), () => store.uchart.limitSetHistory(ch, 'k1')]) {
            const err = await rejection(read());
            expect(err).toBeInstanceOf(CorruptRecordError);
            expect(err).toMatchObject({ kind: 'malformed', context: { chamber: ch, indicatorKey: 'k1', version: 1, column: 'params' } });
            expect((err as Error).message).toMatch(message);
          }
        }
        // The other indicator's set still reads.
        expect((await store.uchart.limitSet(ch, 'k2'))?.indicatorKey).toBe('k2');
      });

      it('truncated and damaged point blobs', async () => {
        const ch = freshChamber();
        await store.chamberState.commitRun(commit(ch, 1, 1, { points: points(10) }));
        expect(await store.uchart.run(ch, 1)).toBeDefined();
        const blob = encodePointSet(points(10));
        await b.corrupt.setRunBody(store, ch, 1, blob.subarray(0, blob.length - 9));
        const truncated = await rejection(store.uchart.history(ch, { limit: 5 }));
        expect(truncated).toBeInstanceOf(CorruptRecordError);
        expect(truncated).toMatchObject({ kind: 'truncated', context: { chamber: ch, sequence: 1, runId: 'run-1', column: 'body' } });
        const future = Buffer.from(blob);
        future[1] = 9;
        await b.corrupt.setRunBody(store, ch, 1, future);
        const unknown = await rejection(store.uchart.run(ch, 1));
        expect(unknown).toBeInstanceOf(UnknownSchemaVersionError);
        expect(unknown).toMatchObject({ found: 9, context: { sequence: 1, column: 'body' } });
      });

      it('unknown schema version of a strategy, malformed alarm JSON', async () => {
        const scope = `recipe/${freshChamber().toolId}`;
        await store.strategies.put({ scope, version: 1, document: { a: 1 }, createdAt: T0, author: 'x' });
        await b.corrupt.setStrategySchemaVersion(store, scope, 1, 99);
        const err = await rejection(store.strategies.get(scope));
        expect(err).toBeInstanceOf(UnknownSchemaVersionError);
        expect(err).toMatchObject({ found: 99, supported: [1], context: { scope, version: 1, column: 'schema_version' } });
        expect(await rejection(store.strategies.latest(['default', scope]))).toBeInstanceOf(UnknownSchemaVersionError);

        const ch = freshChamber();
        await store.chamberState.commitRun(commit(ch, 1, 1, { alarms: [alarm('r1', 'k1')] }));
        await b.corrupt.setAlarmBody(store, ch, 1, 'r1', 'k1', '{"ruleId":"r1",');
        const bad = await rejection(store.alarms.ofRun(ch, 1));
        expect(bad).toBeInstanceOf(CorruptRecordError);
        expect(bad).toMatchObject({ kind: 'malformed', context: { chamber: ch, sequence: 1, runId: 'run-1', column: 'body' } });
      });
    });

    describe('chamber metadata and weights', () => {
      it('upserts, gets and lists chamber metadata (the seed columns)', async () => {
        const ch = freshChamber();
        const m = { ...ch, svidCount: 200, collectionFreqHz: 10, contextDurationSeconds: 1800, weight: 3_600_000, lastUpdated: T0, source: 'configured' as const, observedRuns: 0 };
        await store.chamberMetadata.upsert(m);
        expect(await store.chamberMetadata.get(ch)).toEqual(m);
        expect((await store.chamberMetadata.list()).filter((x) => x.toolId === ch.toolId)).toEqual([m]);
        await store.chamberMetadata.upsert({ ...m, weight: 30_000, svidCount: 50, collectionFreqHz: 1, contextDurationSeconds: 600 });
        expect(await store.chamberMetadata.get(ch)).toMatchObject({ weight: 30_000 });
        expect(await rejection(store.chamberMetadata.upsert({ ...m, weight: 0 }))).toBeInstanceOf(InvalidRecordError);
        expect(await store.chamberMetadata.get(freshChamber())).toBeUndefined();
      });

      it('recomputes weights from the observed runs in the window (median of each factor)', async () => {
        const s = await fresh();
        const now = new Date('2025-06-01T12:00:00Z');
        const hoursAgo = (h: number): Date => new Date(now.getTime() - h * 3_600_000);
        const busy = freshChamber('busy');
        const quiet = freshChamber('quiet');
        const unobserved = freshChamber('none');
        const configured = { svidCount: 100, collectionFreqHz: 1, contextDurationSeconds: 1200, weight: 120_000, lastUpdated: hoursAgo(48), source: 'configured' as const, observedRuns: 0 };
        await s.chamberMetadata.upsert({ ...busy, ...configured });
        await s.chamberMetadata.upsert({ ...unobserved, ...configured });
        const obs = (ch: ChamberRef, runId: string, h: number, svids: number, hz: number, secs: number) =>
          s.chamberMetadata.recordObservation({ ...ch, runId, observedAt: hoursAgo(h), svidCount: svids, collectionFreqHz: hz, contextDurationSeconds: secs });
        await obs(busy, 'b1', 1, 200, 10, 1800);
        await obs(busy, 'b2', 2, 200, 10, 1790.4);
        await obs(busy, 'b3', 3, 200, 10, 30); // aborted run: the median ignores it
        await obs(busy, 'b0', 30, 10, 1, 10); // outside the 24 h window
        await obs(quiet, 'q1', 5, 50, 1, 600);
        const summary = await s.chamberMetadata.recomputeWeights(now);
        expect(summary).toEqual({ updated: 2, unchanged: 0, observedChambers: 2 });
        expect(await s.chamberMetadata.get(busy)).toEqual({
          ...busy,
          svidCount: 200,
          collectionFreqHz: 10,
          contextDurationSeconds: 1790,
          weight: 3_580_000,
          lastUpdated: now,
          source: 'observed',
          observedRuns: 3,
        });
        expect(await s.chamberMetadata.get(quiet)).toMatchObject({ weight: 30_000, source: 'observed', observedRuns: 1 });
        expect(await s.chamberMetadata.get(unobserved)).toEqual({ ...unobserved, ...configured });
        const later = new Date(now.getTime() + 60_000);
        expect(await s.chamberMetadata.recomputeWeights(later)).toEqual({ updated: 0, unchanged: 2, observedChambers: 2 });
        expect(await s.chamberMetadata.get(busy)).toMatchObject({ lastUpdated: later, weight: 3_580_000 });
      }, 120_000);
    });

    describe('lifecycle', () => {
      it('rejects calls after close with StoreClosedError; close is idempotent', async () => {
        const s = await fresh();
        await s.close();
        await s.close();
        expect(await rejection(s.chamberState.get(freshChamber()))).toBeInstanceOf(StoreClosedError);
      });
    });
  });
}
