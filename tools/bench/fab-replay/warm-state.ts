// A saved warm-up (FAB_WARM_STATE) of the whole-fab replay: the cluster's stores right after the
// Phase I warm-up, so a later run measures the steps without warming up again.
//
// The warm-up of the 5,000-chamber fab publishes 155,000 runs and takes 75-120 minutes on this
// machine, most of a session; a measurement of the steps after it takes 10-15. What the warm-up
// leaves behind lives in two stores: the SQLite file (chambers, histories, fitted and frozen limit
// sets, high-water marks) and the NATS server's JetStream directory (the notification stream whose
// sequences the high-water marks refer to, the buckets with stable IDs, heartbeats, assignment maps
// and election records). Both are copied while every process is stopped, and restored together:
// one without the other is a store that lost its stream, which the defenders pause on by design.
//
// The saved state belongs to a fab (chambers, seed), a warm-up length, a number of defenders (their
// stable IDs are in a bucket) and the cluster's bucket names (the tag). A run asking for anything
// else is refused with the difference; a state written by another build is used as it is, and the
// report names the commit that wrote it (stored records are validated by the product on read: a
// format it cannot read dead-letters runs, which the step verdicts count).
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export const WARM_STATE_FORMAT = 1;
const MANIFEST = 'manifest.json';
const NATS_DIR = 'nats';

/** What a saved warm-up is of: a run may use it only for the same fab, warm-up and cluster. */
export interface WarmStateKey {
  chambers: number;
  seed: number;
  warmupRuns: number;
  defenders: number;
}

export interface WarmStateManifest<W = unknown> extends WarmStateKey {
  format: number;
  /** The cluster's tag: its bucket names (`ids-<tag>`, `map-<tag>`, ...). */
  tag: string;
  /** The commit of the tree the warm-up ran on (`+dirty` with uncommitted changes). */
  commit: string;
  node: string;
  savedAt: string;
  /** The SQLite file's name inside the saved state (its -wal file beside it when there was one). */
  dbFile: string;
  /** The warm-up as measured when it ran (for the report of every run that restores it). */
  warmup: W;
}

/** Where the running cluster keeps its stores. */
export interface StorePaths {
  natsDir: string;
  /** The SQLite file; its -wal and -shm companions sit beside it. */
  dbFile: string;
}

/** The saved state's manifest, or undefined when `dir` holds none (nothing saved yet). */
export function readWarmState<W>(dir: string): WarmStateManifest<W> | undefined {
  const file = join(dir, MANIFEST);
  if (!existsSync(file)) return undefined;
  let m: WarmStateManifest<W>;
  try {
    m = JSON.parse(readFileSync(file, 'utf8')) as WarmStateManifest<W>;
  } catch (err) {
    throw new Error(`FAB_WARM_STATE ${dir}: ${MANIFEST} is not JSON (${(err as Error).message}); remove the folder to warm up again`);
  }
  if (m.format !== WARM_STATE_FORMAT)
    throw new Error(`FAB_WARM_STATE ${dir}: format ${String(m.format)}, this bench reads format ${WARM_STATE_FORMAT}; remove the folder to warm up again`);
  for (const k of ['chambers', 'seed', 'warmupRuns', 'defenders'] as const)
    if (!Number.isInteger(m[k])) throw new Error(`FAB_WARM_STATE ${dir}: ${MANIFEST} has no integer ${k}`);
  if (typeof m.tag !== 'string' || !/^[A-Za-z0-9-]+$/.test(m.tag)) throw new Error(`FAB_WARM_STATE ${dir}: ${MANIFEST} has no valid tag`);
  if (typeof m.dbFile !== 'string' || basename(m.dbFile) !== m.dbFile) throw new Error(`FAB_WARM_STATE ${dir}: ${MANIFEST} has no valid dbFile`);
  if (!existsSync(join(dir, m.dbFile)) || !existsSync(join(dir, NATS_DIR)))
    throw new Error(`FAB_WARM_STATE ${dir}: the manifest is there but ${m.dbFile} or ${NATS_DIR}/ is missing; remove the folder to warm up again`);
  return m;
}

/** Throws, naming every difference, when the saved state is not a warm-up of what this run asks for. */
export function checkWarmState(m: WarmStateKey, want: WarmStateKey, dir: string): void {
  const diffs = (['chambers', 'seed', 'warmupRuns', 'defenders'] as const)
    .filter((k) => m[k] !== want[k])
    .map((k) => `${k} ${m[k]} (this run: ${want[k]})`);
  if (diffs.length > 0)
    throw new Error(`FAB_WARM_STATE ${dir} holds the warm-up of another run: ${diffs.join(', ')}; point FAB_WARM_STATE elsewhere or remove the folder`);
}

/** The SQLite file and its write-ahead log (the shared-memory index is rebuilt on open). */
function dbFiles(dbFile: string): string[] {
  return [dbFile, `${dbFile}-wal`].filter((f) => existsSync(f));
}

/**
 * Copies the stopped cluster's stores into `dir` and writes the manifest last: a save cut short
 * leaves a `.partial` folder beside `dir`, never a `dir` that looks complete.
 */
export function saveWarmState<W>(dir: string, from: StorePaths, manifest: Omit<WarmStateManifest<W>, 'format' | 'dbFile'>): void {
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new Error(`FAB_WARM_STATE ${dir} exists and is not empty, but holds no saved warm-up`);
  const partial = join(dirname(dir), `.${basename(dir)}.partial-${process.pid}`);
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  try {
    cpSync(from.natsDir, join(partial, NATS_DIR), { recursive: true });
    for (const f of dbFiles(from.dbFile)) copyFileSync(f, join(partial, basename(f)));
    const full: WarmStateManifest<W> = { ...manifest, format: WARM_STATE_FORMAT, dbFile: basename(from.dbFile) };
    writeFileSync(join(partial, MANIFEST), JSON.stringify(full, null, 1));
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dirname(dir), { recursive: true });
    renameSync(partial, dir);
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    throw err;
  }
}

/** Copies a saved state's stores to where the cluster about to start keeps them (both must not exist yet). */
export function restoreWarmState(dir: string, m: WarmStateManifest<unknown>, to: StorePaths): void {
  if (existsSync(to.natsDir) || existsSync(to.dbFile)) throw new Error(`restoring FAB_WARM_STATE ${dir}: ${to.natsDir} or ${to.dbFile} exists already`);
  cpSync(join(dir, NATS_DIR), to.natsDir, { recursive: true });
  mkdirSync(dirname(to.dbFile), { recursive: true });
  for (const f of dbFiles(join(dir, m.dbFile))) copyFileSync(f, join(dirname(to.dbFile), basename(f).replace(m.dbFile, basename(to.dbFile))));
}
