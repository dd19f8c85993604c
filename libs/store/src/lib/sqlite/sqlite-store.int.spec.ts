import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { runInNewContext } from 'node:vm';
import Database from 'better-sqlite3';
import { StoreUnavailableError, type ChamberRef, type DefenderStore } from '@defender/contracts';
import { MigrationError } from '../migration-error';
import { commit, freshChamber, limitSet } from '../../testing/fixtures';
import { limitSetFromWire } from '../codec/rows';
import { describeStoreContract } from '../../testing/store-contract';
import { sqliteCorruptor } from '../../testing/sqlite-corruptor';
import { encodePointSet } from '../codec/point-set-codec';
import { migrateSqlite, SQLITE_MIGRATIONS } from './migrations';
import { DEFAULT_PAGE_CACHE_KIB, DEFAULT_SQLITE_TRACE_CHUNK_BYTES, mapSqliteError, SqliteStore } from './sqlite-store';
import { MAX_TRACE_CHUNK_BYTES, releaseTraceMemory } from '../codec/trace-codec';

function db(store: DefenderStore): Database.Database {
  return (store as SqliteStore).database;
}

const corrupt = sqliteCorruptor(db);

const dir = mkdtempSync(join(tmpdir(), 'defender-store-sqlite-'));
let files = 0;
const newFile = (): string => join(dir, `store-${files++}.db`);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describeStoreContract('SQLite :memory:', () => ({
  openFresh: () => SqliteStore.open({ filename: ':memory:' }),
  // One in-memory database has one connection; the "second process" shares it.
  openPeer: async (store) => store,
  corrupt,
  traceChunkBytes: DEFAULT_SQLITE_TRACE_CHUNK_BYTES,
}));

describeStoreContract('SQLite file (WAL)', () => ({
  openFresh: () => SqliteStore.open({ filename: newFile() }),
  openPeer: (store) => SqliteStore.open({ filename: db(store).name }),
  corrupt,
  traceChunkBytes: DEFAULT_SQLITE_TRACE_CHUNK_BYTES,
}));

function repoRoot(): string {
  let d = __dirname;
  while (!existsSync(join(d, 'tools', 'scripts', 'register.js'))) {
    const up = dirname(d);
    if (up === d) throw new Error('repository root not found');
    d = up;
  }
  return d;
}

interface WorkerLine {
  role: 'a' | 'b';
  ready?: boolean;
  claimedAt?: number;
  seq?: number;
  outcome?: 'applied' | 'already-applied' | 'fenced';
}

function startWorker(file: string, role: 'a' | 'b', runs: number): { lines: WorkerLine[]; ready: Promise<void>; done: Promise<void> } {
  const root = repoRoot();
  const child = spawn(process.execPath, ['-r', join(root, 'tools/scripts/register.js'), resolve(__dirname, '../../testing/sqlite-race-worker.ts'), file, role, String(runs)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: WorkerLine[] = [];
  let stderr = '';
  let buffered = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffered.slice(0, nl)) as WorkerLine;
      buffered = buffered.slice(nl + 1);
      if (line.ready) onReady();
      else lines.push(line);
    }
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const done = new Promise<void>((res, rej) =>
    child.on('exit', (code) => (code === 0 ? res() : rej(new Error(`worker ${role} exited ${code}: ${stderr}`)))),
  );
  return { lines, ready, done };
}

describe('SQLite store: files shared by processes', () => {
  it('opens a file in WAL mode and reopens it without re-migrating', async () => {
    const file = newFile();
    const s1 = await SqliteStore.open({ filename: file });
    expect(s1.journalMode).toBe('wal');
    await s1.chamberState.commitRun(commit({ toolId: 'T', chamberId: 'C' }, 1, 1));
    await s1.close();
    const s2 = await SqliteStore.open({ filename: file });
    expect((await s2.chamberState.get({ toolId: 'T', chamberId: 'C' }))?.highWaterMark).toBe(1);
    expect(s2.database.prepare('SELECT id FROM schema_migrations').all()).toEqual(SQLITE_MIGRATIONS.map((m) => ({ id: m.id })));
    await s2.close();
  });

  it('writes traces in chunks of 64 KiB by default (below the image\'s malloc mmap threshold), and reads any chunk size it finds', async () => {
    const file = newFile();
    const big = Float64Array.from({ length: 50_000 }, (_, i) => Math.cos(i)); // 400,000 bytes: 6 chunks of 64 KiB and one of 6,784
    const write = (store: SqliteStore, runId: string) =>
      store.traces.write({ toolId: 'T', chamberId: 'C', runId, timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 }, svids: new Map([['big', big]]), steps: [] });
    const dflt = await SqliteStore.open({ filename: file });
    await write(dflt, 'r64');
    const sizes = (runId: string) =>
      (dflt.database.prepare('SELECT byte_length AS n FROM trace_chunks WHERE run_id = ? ORDER BY chunk').all(runId) as { n: number }[]).map((r) => r.n);
    expect(DEFAULT_SQLITE_TRACE_CHUNK_BYTES).toBe(65_536);
    expect(sizes('r64')).toEqual([...Array(6).fill(65_536), 400_000 - 6 * 65_536]);
    // A trace written with 1 MiB chunks (another writer's setting) reads back the same.
    const wide = await SqliteStore.open({ filename: file, traceChunkBytes: MAX_TRACE_CHUNK_BYTES });
    await write(wide, 'r1m');
    await wide.close();
    expect(sizes('r1m')).toEqual([400_000]);
    for (const runId of ['r64', 'r1m']) {
      const back = (await dflt.traces.read({ toolId: 'T', chamberId: 'C', runId })).svids.get('big') as Float64Array;
      expect(Buffer.from(back.buffer, back.byteOffset, back.byteLength).equals(Buffer.from(big.buffer))).toBe(true);
    }
    await dflt.close();
  });

  it('frees its copies of a trace\'s chunks as it reads them: a read adds the trace\'s buffer to external memory, not its chunk copies too', async () => {
    const store = await SqliteStore.open({ filename: newFile(), traceChunkBytes: MAX_TRACE_CHUNK_BYTES, tracePoolBytes: 0 });
    try {
      // 8 series of 1 MiB: eight chunk copies of 1 MiB (the driver's Buffers) and one 8 MiB trace buffer.
      const svids = new Map<string, Float64Array>();
      for (let s = 0; s < 8; s++) svids.set(`S${s}`, Float64Array.from({ length: 131_072 }, (_, i) => Math.sin(i + s)));
      const run = { toolId: 'T', chamberId: 'C', runId: 'r1' };
      await store.traces.write({ ...run, timing: { kind: 'regular', startSeconds: 0, frequencyHz: 10 }, svids, steps: [] });
      const before = process.memoryUsage().arrayBuffers;
      const back = await store.traces.read(run);
      const grown = process.memoryUsage().arrayBuffers - before;
      // The trace holds 8 MiB; the copies would add 8 more until a collection. (A collection can only lower this.)
      expect(grown).toBeLessThan(9 * 1024 * 1024);
      for (const [name, values] of svids) {
        const got = back.svids.get(name) as Float64Array;
        expect(Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(Buffer.from(values.buffer))).toBe(true);
      }
    } finally {
      await store.close();
    }
  });

  it('reads traces into pooled buffers: released, a trace\'s buffer carries the next read, and the released arrays read as empty', async () => {
    const store = await SqliteStore.open({ filename: newFile() });
    try {
      const mk = (runId: string, fill: number, samples: number) => ({
        toolId: 'T',
        chamberId: 'C',
        runId,
        timing: { kind: 'regular' as const, startSeconds: 0, frequencyHz: 10 },
        svids: new Map<string, Float32Array>([['a', new Float32Array(samples).fill(fill)], ['b', new Float32Array(samples).fill(-fill)]]),
        steps: [],
      });
      await store.traces.write(mk('r1', 1, 50_000));
      await store.traces.write(mk('r2', 2, 60_000)); // 480 KB: the class of r1's 400 KB (512 KiB)
      const first = await store.traces.read({ toolId: 'T', chamberId: 'C', runId: 'r1' });
      const a1 = first.svids.get('a') as Float32Array;
      expect(a1.length).toBe(50_000);
      expect(releaseTraceMemory(first)).toBe(400_000); // the trace's samples (in a 512 KiB buffer)
      expect(a1.length).toBe(0); // a use after release fails instead of reading the next run's samples
      const second = await store.traces.read({ toolId: 'T', chamberId: 'C', runId: 'r2' });
      expect(store.tracePool.stats()).toMatchObject({ allocated: 1, reused: 1, kept: 1 });
      expect((second.svids.get('a') as Float32Array).length).toBe(60_000);
      expect((second.svids.get('a') as Float32Array).every((v) => v === 2)).toBe(true);
      expect((second.svids.get('b') as Float32Array).every((v) => v === -2)).toBe(true);
      releaseTraceMemory(second);
      expect(store.tracePool.stats()).toMatchObject({ retainedBuffers: 1, retainedBytes: 512 * 1024 });
    } finally {
      await store.close();
    }
    expect(store.tracePool.stats().retainedBytes).toBe(0); // closing frees the pool
    await expect(SqliteStore.open({ filename: newFile(), tracePoolBytes: -1 })).rejects.toThrow(/tracePoolBytes/);
  });

  it('bounds the connection page cache (default 4 MiB, not the 16 MB better-sqlite3 builds in) and rejects a bad size', async () => {
    const dflt = await SqliteStore.open({ filename: newFile() });
    expect(dflt.database.pragma('cache_size', { simple: true })).toBe(-DEFAULT_PAGE_CACHE_KIB);
    await dflt.close();
    const small = await SqliteStore.open({ filename: newFile(), pageCacheKiB: 1024 });
    expect(small.database.pragma('cache_size', { simple: true })).toBe(-1024);
    await small.close();
    await expect(SqliteStore.open({ filename: newFile(), pageCacheKiB: 0 })).rejects.toThrow(/pageCacheKiB/);
    await expect(SqliteStore.open({ filename: newFile(), pageCacheKiB: 1.5 })).rejects.toThrow(/pageCacheKiB/);
  });

  it('two processes racing on one chamber of a fresh file: both migrate safely, exactly one commit per run, the deposed owner stays fenced', async () => {
    const file = newFile();
    const runs = 600;
    const a = startWorker(file, 'a', runs);
    const b = startWorker(file, 'b', runs);
    await Promise.all([a.ready, b.ready]);
    writeFileSync(`${file}.go`, '');
    await Promise.all([a.done, b.done]);

    const attempts = [...a.lines, ...b.lines].filter((l) => l.seq !== undefined);
    for (let seq = 1; seq <= runs; seq++) {
      expect({ seq, applied: attempts.filter((l) => l.seq === seq && l.outcome === 'applied').length }).toEqual({ seq, applied: 1 });
    }
    const aOutcomes = a.lines.map((l) => l.outcome);
    const firstFenced = aOutcomes.indexOf('fenced');
    expect(firstFenced).toBeGreaterThan(0); // the takeover happened mid-stream...
    expect(aOutcomes.slice(firstFenced).every((o) => o === 'fenced')).toBe(true); // ...and fenced A for good
    expect(b.lines.some((l) => l.outcome === 'fenced')).toBe(false);
    expect(b.lines.filter((l) => l.outcome === 'already-applied').length).toBeGreaterThan(0); // redeliveries below the mark

    const store = await SqliteStore.open({ filename: file });
    const history = await store.uchart.history({ toolId: 'race', chamberId: 'C1' }, { limit: 10_000 });
    expect(history.map((r) => r.sequence)).toEqual(Array.from({ length: runs }, (_, i) => i + 1));
    const epochs = history.map((r) => r.epoch);
    expect(epochs).toEqual([...epochs].sort((x, y) => x - y));
    expect(await store.chamberState.get({ toolId: 'race', chamberId: 'C1' })).toMatchObject({ ownerEpoch: 2, highWaterMark: runs });
    expect(store.database.prepare('SELECT id FROM schema_migrations').all()).toEqual(SQLITE_MIGRATIONS.map((m) => ({ id: m.id })));
    await store.close();
  }, 120_000);

  it('a write lock held too long by another process is a retryable StoreUnavailableError, not a failure of the data', async () => {
    const file = newFile();
    const store = await SqliteStore.open({ filename: file, busyTimeoutMs: 100 });
    const other = new Database(file);
    const ch: ChamberRef = freshChamber();
    other.exec('BEGIN IMMEDIATE');
    try {
      const err = await store.chamberState.commitRun(commit(ch, 1, 1)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(err).toMatchObject({ retryable: true });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect((await store.chamberState.commitRun(commit(ch, 1, 1))).outcome).toBe('applied');
    await store.close();
  });

  it('refuses a database whose recorded migrations differ from this release', async () => {
    const changed = newFile();
    await (await SqliteStore.open({ filename: changed })).close();
    const raw = new Database(changed);
    raw.prepare("UPDATE schema_migrations SET checksum = 'edited' WHERE id = 1").run();
    raw.close();
    await expect(SqliteStore.open({ filename: changed })).rejects.toThrow(MigrationError);

    const newer = newFile();
    await (await SqliteStore.open({ filename: newer })).close();
    const raw2 = new Database(newer);
    raw2.prepare("INSERT INTO schema_migrations (id, name, checksum, applied_at) VALUES (99, 'future', 'x', 0)").run();
    raw2.close();
    await expect(SqliteStore.open({ filename: newer })).rejects.toThrow(/does not know/);
  });

  it('migration 2 on a file of the previous release: the run ids already applied are skipped, nothing is pending in the outbox', async () => {
    const file = newFile();
    const ch = freshChamber();
    const legacy = new Database(file);
    migrateSqlite(legacy, SQLITE_MIGRATIONS.slice(0, 1));
    legacy.prepare('INSERT INTO chamber_state (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at) VALUES (?, ?, 1, 3, ?, 0)').run(ch.toolId, ch.chamberId, 'defender-1');
    const run = legacy.prepare('INSERT INTO uchart_runs (tool_id, chamber_id, seq, run_id, epoch, committed_at, recipe, body) VALUES (?, ?, ?, ?, 1, 0, NULL, ?)');
    // run-1 was applied twice by the old release (the bug this migration ends): its first sequence counts.
    for (const [seq, runId] of [[1, 'run-1'], [2, 'run-2'], [3, 'run-1']] as const) run.run(ch.toolId, ch.chamberId, seq, runId, encodePointSet([]));
    legacy.close();

    const store = await SqliteStore.open({ filename: file });
    try {
      expect(await store.chamberState.appliedRun(ch, 'run-1')).toBe(1);
      expect(await store.chamberState.appliedRun(ch, 'run-2')).toBe(2);
      expect(await store.chamberState.commitRun(commit(ch, 2, 9, { runId: 'run-2' }))).toMatchObject({ outcome: 'duplicate-run', appliedSequence: 2, state: { highWaterMark: 9 } });
      expect(await store.outbox.publishedThrough(ch)).toBe(0);
      expect(await store.outbox.pending(ch, { limit: 10 })).toEqual([]);
      expect((await store.chamberState.commitRun(commit(ch, 2, 10))).outcome).toBe('applied');
    } finally {
      await store.close();
    }
  });

  it('migration 3 on a file of the previous release: a mark without a stream adopts one once, then re-bases', async () => {
    const file = newFile();
    const ch = freshChamber();
    const legacy = new Database(file);
    migrateSqlite(legacy, SQLITE_MIGRATIONS.slice(0, 2));
    legacy.prepare('INSERT INTO chamber_state (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at) VALUES (?, ?, 1, 30, ?, 0)').run(ch.toolId, ch.chamberId, 'defender-1');
    legacy.close();

    const store = await SqliteStore.open({ filename: file });
    try {
      const before = await store.chamberState.claim(ch, 2, 'defender-2', new Date(0));
      expect(before).toMatchObject({ highWaterMark: 30 });
      expect(before.streamId).toBeUndefined();
      expect(before.streamOffset ?? 0).toBe(0);
      expect(await store.chamberState.bindStream({ chamber: ch, epoch: 2, expectedStreamId: undefined, streamId: 'created-1', rebase: false })).toMatchObject({ highWaterMark: 30, streamId: 'created-1' });
      expect(await store.chamberState.bindStream({ chamber: ch, epoch: 2, expectedStreamId: 'created-1', streamId: 'created-2', rebase: true })).toMatchObject({ highWaterMark: 30, streamId: 'created-2', streamOffset: 30 });
    } finally {
      await store.close();
    }
  });

  it('migration 4 on a file of the previous release: runs committed before it keep their points, a chamber has no monitor state until a commit carries one', async () => {
    const file = newFile();
    const ch = freshChamber();
    const legacy = new Database(file);
    migrateSqlite(legacy, SQLITE_MIGRATIONS.slice(0, 3));
    // A run judged by the earlier release: its monitor memory in the model point's chart.
    const judged = commit(ch, 1, 5, { points: [{ indicatorKey: 'recipe-A|m:model', value: 2.5, limitsVersion: 1, flags: 0, chart: { spe: 1, judgedRuns: 4, z0: 0.5 } }] });
    legacy.prepare('INSERT INTO chamber_state (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at) VALUES (?, ?, 1, 5, ?, 0)').run(ch.toolId, ch.chamberId, 'defender-1');
    legacy
      .prepare('INSERT INTO uchart_runs (tool_id, chamber_id, seq, run_id, epoch, committed_at, recipe, body) VALUES (?, ?, 5, ?, 1, ?, ?, ?)')
      .run(ch.toolId, ch.chamberId, judged.runId, judged.committedAt.getTime(), 'recipe-A', encodePointSet(judged.points));
    legacy.close();

    const store = await SqliteStore.open({ filename: file });
    try {
      expect(await store.monitorState.list(ch)).toEqual([]);
      expect((await store.uchart.run(ch, 5))?.points).toEqual(judged.points);
      const state = { phase: 'judging' as const, modelVersion: 1, judgedRuns: 5, extensionCheckAt: null, mewma: [0.4], levelOffsets: {} };
      await store.chamberState.commitRun(commit(ch, 1, 6, { monitorState: state }));
      expect(await store.monitorState.get(ch, 'recipe-A')).toMatchObject({ sequence: 6, state });
    } finally {
      await store.close();
    }
  });

  it('migration 5 on a file of the previous release: a chamber has no memory until a commit carries one', async () => {
    const file = newFile();
    const ch = freshChamber();
    const legacy = new Database(file);
    migrateSqlite(legacy, SQLITE_MIGRATIONS.slice(0, 4));
    legacy.prepare('INSERT INTO chamber_state (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at) VALUES (?, ?, 1, 5, ?, 0)').run(ch.toolId, ch.chamberId, 'defender-1');
    legacy.close();

    const store = await SqliteStore.open({ filename: file });
    try {
      expect(await store.chamberMemory.get(ch)).toBeUndefined();
      const memory = { recentAlarms: [false, true], fromFirstRun: false };
      await store.chamberState.commitRun(commit(ch, 1, 6, { chamberMemory: memory }));
      expect(await store.chamberMemory.get(ch)).toMatchObject({ sequence: 6, memory });
    } finally {
      await store.close();
    }
  });

  it('migrations 6 and 7 on a file of the previous release: its limit-set models stay readable; no model record, no event until a commit carries one', async () => {
    const file = newFile();
    const ch = freshChamber();
    const legacy = new Database(file);
    migrateSqlite(legacy, SQLITE_MIGRATIONS.slice(0, 5));
    legacy.close();
    const before = await SqliteStore.open({ filename: file });
    const model = limitSet(ch, 'recipe-A|m:model', 1, { chartType: 'monitor', params: { model: { kind: 'monitor', version: 1 } } });
    await before.uchart.putLimitSet(model);
    await before.close();

    const store = await SqliteStore.open({ filename: file });
    try {
      expect(await store.uchart.limitSet(ch, 'recipe-A|m:model')).toEqual(model);
      expect(await store.monitorModels.versions(ch)).toEqual([]);
      expect(await store.chamberEvents.list(ch, { limit: 5 })).toEqual([]);
      const event = { schema: 1 as const, ...ch, eventId: 'pm-1', kind: 'pm' as const, at: '2026-12-08T00:00:00.000Z' };
      await store.chamberState.commitRun(commit(ch, 1, 1, { runId: 'event:pm-1', points: [], event: { event, monitorStates: [] } }));
      expect((await store.chamberEvents.list(ch, { limit: 5 })).map((e) => e.event)).toEqual([event]);
    } finally {
      await store.close();
    }
  });

  it('a path that cannot be opened as a database is a StoreUnavailableError', async () => {
    await expect(SqliteStore.open({ filename: dir })).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('SQLite limit-set reads for the store thread (uchart.wire)', () => {
  it('leave the JSON columns as text, and decode to what the repository reads', async () => {
    const store = await SqliteStore.open({ filename: ':memory:' });
    try {
      const ch = freshChamber();
      const model = { model: { kind: 'monitor', center: [1.5, -2], variables: ['a', 'b'] } };
      await store.uchart.putLimitSet(limitSet(ch, 'k1', 1, { params: model }));
      await store.uchart.putLimitSet(limitSet(ch, 'k1', 2));
      await store.uchart.putLimitSet(limitSet(ch, 'k2', 1));
      const reads = [
        [await store.uchart.wire.currentLimitSets(ch), await store.uchart.currentLimitSets(ch)],
        [await store.uchart.wire.limitSetHistory(ch, 'k1'), await store.uchart.limitSetHistory(ch, 'k1')],
        [[await store.uchart.wire.limitSet(ch, 'k1', 1)], [await store.uchart.limitSet(ch, 'k1', 1)]],
      ] as const;
      for (const [wire, records] of reads) {
        expect(wire.length).toBeGreaterThan(0);
        for (const w of wire) {
          expect(typeof w?.params).toBe('string');
          expect(typeof w?.baseline).toBe('string');
        }
        expect(wire.map((w) => w && limitSetFromWire(w))).toEqual(records);
      }
      expect(JSON.parse((await store.uchart.wire.limitSet(ch, 'k1', 1))?.params as string)).toEqual(model);
      expect(await store.uchart.wire.limitSet(ch, 'k3')).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});

describe('SQLite errors', () => {
  // better-sqlite3's addon keeps the SqliteError class of the first module instance that opened a
  // database in the process: under Jest that is another test file's, from another realm.
  const foreign = (code: string, name = 'SqliteError'): unknown =>
    runInNewContext(`class E extends Error {}; Object.defineProperty(E.prototype, 'name', { value: ${JSON.stringify(name)} }); Object.assign(new E('database is locked'), { code: ${JSON.stringify(code)} })`);

  it('a SqliteError of another module instance and realm is mapped by its code', () => {
    const busy = mapSqliteError(foreign('SQLITE_BUSY'), 'commit run');
    expect(busy).toBeInstanceOf(StoreUnavailableError);
    expect(busy).toMatchObject({ retryable: true, message: 'SQLite: commit run failed: database is locked (SQLITE_BUSY)' });
    expect(mapSqliteError(foreign('SQLITE_CORRUPT'), 'read')).toMatchObject({ name: 'CorruptRecordError' });
  });

  it('another error with an SQLite-like code passes through unchanged', () => {
    const other = foreign('SQLITE_BUSY', 'TypeError');
    expect(mapSqliteError(other, 'commit run')).toBe(other);
    expect(mapSqliteError(foreign('SQLITE_CONSTRAINT'), 'commit run')).toMatchObject({ name: 'SqliteError', code: 'SQLITE_CONSTRAINT' });
  });
});
