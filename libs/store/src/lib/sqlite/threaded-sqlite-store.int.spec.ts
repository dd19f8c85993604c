import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import {
  FencedError,
  InvalidRecordError,
  StoreClosedError,
  StoreUnavailableError,
  type DefenderStore,
} from '@defender/contracts';
import { commit, freshChamber, trace } from '../../testing/fixtures';
import { sqliteCorruptor } from '../../testing/sqlite-corruptor';
import { describeStoreContract } from '../../testing/store-contract';
import { releaseTraceMemory } from '../codec/trace-codec';
import { openStore } from '../open-store';
import { STORE_THREAD_NAME, ThreadedSqliteStore } from './threaded-sqlite-store';
import { DEFAULT_SQLITE_TRACE_CHUNK_BYTES } from './sqlite-store';

const dir = mkdtempSync(join(tmpdir(), 'defender-store-thread-'));
let files = 0;
const newFile = (): string => join(dir, `store-${files++}.db`);

/** Side connections (as another process would hold) to the files of threaded stores, for the corruptor. */
const side = new Map<string, Database.Database>();
function sideDb(store: DefenderStore): Database.Database {
  const file = (store as ThreadedSqliteStore).filename;
  let db = side.get(file);
  if (!db) {
    db = new Database(file, { timeout: 20_000 });
    side.set(file, db);
  }
  return db;
}

afterAll(() => {
  for (const db of side.values()) db.close();
  rmSync(dir, { recursive: true, force: true });
});

describeStoreContract('SQLite file on its own thread', () => ({
  openFresh: () => ThreadedSqliteStore.open({ filename: newFile() }),
  openPeer: (store) => ThreadedSqliteStore.open({ filename: (store as ThreadedSqliteStore).filename }),
  corrupt: sqliteCorruptor(sideDb),
  traceChunkBytes: DEFAULT_SQLITE_TRACE_CHUNK_BYTES,
}));

/** Lets the event loop turn `n` times (no clock involved). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

/** Settles to 'pending' while `p` has neither resolved nor rejected. */
async function state(p: Promise<unknown>): Promise<'pending' | 'resolved' | 'rejected'> {
  const marker = Symbol('pending');
  try {
    return (await Promise.race([p, Promise.resolve(marker)])) === marker ? 'pending' : 'resolved';
  } catch {
    return 'rejected';
  }
}

/** Another process's exclusive lock on `file` (released by the returned function). */
function lockFile(file: string): { release(): void } {
  const holder = new Database(file);
  holder.exec('BEGIN EXCLUSIVE');
  return {
    release() {
      holder.exec('COMMIT');
      holder.close();
    },
  };
}

describe('ThreadedSqliteStore', () => {
  it('is what openStore gives for kind sqlite, and reports the journal mode', async () => {
    const store = await openStore({ kind: 'sqlite', sqlite: { filename: newFile() } });
    try {
      expect(store).toBeInstanceOf(ThreadedSqliteStore);
      expect((store as ThreadedSqliteStore).journalMode).toBe('wal');
    } finally {
      await store.close();
    }
  });

  it('keeps the event loop turning while its thread waits for another writer, and then writes', async () => {
    const file = newFile();
    const store = await ThreadedSqliteStore.open({ filename: file, busyTimeoutMs: 120_000 });
    const lock = lockFile(file);
    try {
      const chamber = freshChamber();
      const claim = store.chamberState.claim(chamber, 1, 'd-1', new Date());
      // This thread goes on (an in-process store would be stuck in its busy wait until the timeout).
      await turns(50);
      expect(await state(claim)).toBe('pending');
      lock.release();
      await expect(claim).resolves.toMatchObject({ ownerEpoch: 1, highWaterMark: 0 });
    } finally {
      await store.close();
    }
  });

  it('answers reads while writes wait for another process\'s write lock; the writes then land in the order they were made', async () => {
    const file = newFile();
    const store = await ThreadedSqliteStore.open({ filename: file, busyTimeoutMs: 120_000 });
    try {
      const chamber = freshChamber();
      await store.chamberState.claim(chamber, 1, 'defender-1', new Date());
      await store.chamberState.commitRun(commit(chamber, 1, 1));
      const lock = lockFile(file);
      const second = store.chamberState.commitRun(commit(chamber, 1, 2));
      const third = store.chamberState.commitRun(commit(chamber, 1, 3));
      // Reads made after the waiting writes are answered from the committed state, not queued behind
      // them (SQLite's own busy handler would hold them until the lock is free or the 120 s are up).
      expect(await store.chamberState.get(chamber)).toMatchObject({ highWaterMark: 1 });
      expect((await store.uchart.history(chamber, { limit: 10 })).map((r) => r.sequence)).toEqual([1]);
      expect(await state(second)).toBe('pending');
      expect(await state(third)).toBe('pending');
      lock.release();
      await expect(second).resolves.toMatchObject({ outcome: 'applied' });
      await expect(third).resolves.toMatchObject({ outcome: 'applied' });
      expect(await store.chamberState.get(chamber)).toMatchObject({ highWaterMark: 3 });
    } finally {
      await store.close();
    }
  });

  it('a write that finds the lock taken for longer than busyTimeoutMs fails retryable, and so does the one behind it; nothing of them is written', async () => {
    const file = newFile();
    const store = await ThreadedSqliteStore.open({ filename: file, busyTimeoutMs: 200 });
    const lock = lockFile(file);
    let released = false;
    try {
      const first = freshChamber();
      const second = freshChamber();
      const order: string[] = [];
      const outcome = (name: string, p: Promise<unknown>): Promise<unknown> =>
        p.then(
          (v) => (order.push(name), v),
          (e: unknown) => (order.push(name), e),
        );
      const [a, b] = await Promise.all([
        outcome('first', store.chamberState.claim(first, 1, 'd-1', new Date())),
        outcome('second', store.chamberState.claim(second, 1, 'd-1', new Date())),
      ]);
      for (const failed of [a, b]) {
        expect(failed).toBeInstanceOf(StoreUnavailableError);
        expect((failed as StoreUnavailableError).message).toMatch(/SQLITE_BUSY/);
      }
      expect(order).toEqual(['first', 'second']);
      lock.release();
      released = true;
      expect(await store.chamberState.get(first)).toBeUndefined();
      expect(await store.chamberState.get(second)).toBeUndefined();
      await expect(store.chamberState.claim(second, 1, 'd-1', new Date())).resolves.toMatchObject({ ownerEpoch: 1 });
    } finally {
      if (!released) lock.release();
      await store.close();
    }
  });

  it('rebuilds the errors of the thread with their class, fields and cause', async () => {
    const file = newFile();
    const store = await ThreadedSqliteStore.open({ filename: file, busyTimeoutMs: 50 });
    try {
      const chamber = freshChamber();
      await store.chamberState.claim(chamber, 5, 'd-5', new Date());
      const fenced = await store.chamberState.commitRun(commit(chamber, 4, 1)).catch((e: unknown) => e);
      expect(fenced).toBeInstanceOf(FencedError);
      expect(fenced).toMatchObject({
        name: 'FencedError',
        chamber,
        callerEpoch: 4,
        storedEpoch: 5,
        storedOwnerId: 'd-5',
      });
      expect((fenced as Error).stack).toContain('sqlite-store');

      const invalid = await store.chamberState
        .claim({ toolId: 'bad:id', chamberId: 'C' }, 1, 'd', new Date())
        .catch((e: unknown) => e);
      expect(invalid).toBeInstanceOf(InvalidRecordError);
      expect((invalid as InvalidRecordError).issues[0]?.path).toBe('chamber.toolId');

      const lock = lockFile(file);
      const busy = await store.chamberState
        .claim(freshChamber(), 1, 'd', new Date())
        .catch((e: unknown) => e);
      lock.release();
      expect(busy).toBeInstanceOf(StoreUnavailableError);
      expect((busy as Error).message).toMatch(/SQLITE_BUSY/);
      const cause = (busy as Error).cause as Error & { code?: string };
      expect(cause).toBeInstanceOf(Error);
      expect(cause.name).toBe('SqliteError');
      expect(cause.code).toBe('SQLITE_BUSY');
      expect(cause.message).toMatch(/locked/);
    } finally {
      await store.close();
    }
  });

  it("tells its thread's CPU time and profiles the thread while it serves calls; a closed store does neither", async () => {
    const store = await ThreadedSqliteStore.open({ filename: newFile() });
    const chamber = freshChamber();
    const written = trace(chamber, 'run-1', 8, 20_000);
    await store.traces.write(written);
    const before = await store.threadCpuUsage();
    // Reads served during the profile: the thread's store code (SqliteTraces.read, sqlite-traces.ts) must show in it.
    let reading = true;
    const reads = (async () => {
      while (reading) releaseTraceMemory(await store.traces.read(written));
    })();
    const profile = (await store.threadCpuProfile(300)) as { nodes: { callFrame: { functionName: string; url: string } }[]; samples: number[] };
    reading = false;
    await reads;
    const after = await store.threadCpuUsage();
    expect(before && after).toBeDefined();
    expect(after!.user + after!.system).toBeGreaterThan(before!.user + before!.system);
    expect(profile.samples.length).toBeGreaterThan(0);
    expect(profile.nodes.some((n) => /sqlite-traces/.test(n.callFrame.url) && n.callFrame.functionName === 'read')).toBe(true);
    // The OS thread carries the store thread's name (top -H, /proc/<pid>/task/<tid>/comm).
    const names = readdirSync(`/proc/${process.pid}/task`).map((t) => {
      try {
        return readFileSync(`/proc/${process.pid}/task/${t}/comm`, 'utf8').trim();
      } catch {
        return ''; // a thread that ended meanwhile
      }
    });
    expect(names).toContain(STORE_THREAD_NAME);
    await store.close();
    expect(await store.threadCpuUsage()).toBeUndefined();
    await expect(store.threadCpuProfile(10)).rejects.toThrow(StoreUnavailableError);
  });

  it('moves the samples of a trace read (no copy) and copies those written; a released trace\'s buffer moves back and carries the next read', async () => {
    const store = await ThreadedSqliteStore.open({ filename: newFile() });
    try {
      const chamber = freshChamber();
      const written = trace(chamber, 'run-1', 4, 5000, { explicit: true });
      const before = [...written.svids.values()].map((a) => Array.from(a.subarray(0, 20)));
      await store.traces.write(written);
      await store.traces.write(trace(chamber, 'run-2', 4, 5000, { explicit: true }));
      // The caller keeps its arrays.
      expect([...written.svids.values()].map((a) => Array.from(a.subarray(0, 20)))).toEqual(before);
      const back = await store.traces.read(written);
      expect([...back.svids.keys()]).toEqual([...written.svids.keys()]);
      const first = back.svids.get([...written.svids.keys()][0]!)!;
      expect(Array.from(first.subarray(0, 20))).toEqual(before[0]);
      expect(await store.tracePoolStats()).toMatchObject({ allocated: 1, reused: 0, retainedBuffers: 0 });
      expect(releaseTraceMemory(back)).toBeGreaterThan(0);
      expect(first.length).toBe(0); // moved back to the thread: nothing of it is readable here
      expect(await store.tracePoolStats()).toMatchObject({ kept: 1, retainedBuffers: 1 });
      const next = await store.traces.read({ ...chamber, runId: 'run-2' });
      expect(await store.tracePoolStats()).toMatchObject({ allocated: 1, reused: 1, retainedBuffers: 0 });
      expect(next.svids.size).toBe(4);
      releaseTraceMemory(next);
    } finally {
      await store.close();
    }
    expect(await store.tracePoolStats()).toBeUndefined();
  });

  it('opening reports what the thread found: a bad option, a file that cannot be opened', async () => {
    await expect(ThreadedSqliteStore.open({ filename: newFile(), pageCacheKiB: 0 })).rejects.toBeInstanceOf(
      InvalidRecordError,
    );
    await expect(ThreadedSqliteStore.open({ filename: dir })).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('close lets the calls already made finish; later calls reject with StoreClosedError', async () => {
    const file = newFile();
    const store = await ThreadedSqliteStore.open({ filename: file, busyTimeoutMs: 120_000 });
    const lock = lockFile(file);
    const chamber = freshChamber();
    const claim = store.chamberState.claim(chamber, 1, 'd-1', new Date());
    const closing = store.close();
    await expect(store.chamberState.get(chamber)).rejects.toBeInstanceOf(StoreClosedError);
    lock.release();
    await expect(claim).resolves.toMatchObject({ ownerEpoch: 1 });
    await closing;
    await store.close();
    await expect(store.traces.read({ ...chamber, runId: 'r' })).rejects.toBeInstanceOf(StoreClosedError);
  });

  it('a thread that dies fails every pending and later call with StoreUnavailableError and says why', async () => {
    const file = newFile();
    const store = await ThreadedSqliteStore.open({ filename: file, busyTimeoutMs: 120_000 });
    const lock = lockFile(file);
    try {
      const chamber = freshChamber();
      const claim = store.chamberState.claim(chamber, 1, 'd-1', new Date());
      await (store as unknown as { worker: Worker }).worker.terminate();
      const pending = await claim.catch((e: unknown) => e);
      expect(pending).toBeInstanceOf(StoreUnavailableError);
      expect(pending).toMatchObject({ outcomeUnknown: true });
      expect((pending as Error).message).toMatch(/thread exited.*chamberState\.claim was not answered/);
      expect(store.failure?.message).toMatch(/thread exited/);
      const later = await store.chamberState.get(chamber).catch((e: unknown) => e);
      expect(later).toBeInstanceOf(StoreUnavailableError);
      expect(later).toMatchObject({ outcomeUnknown: false });
    } finally {
      lock.release();
      await store.close();
    }
  });
});
