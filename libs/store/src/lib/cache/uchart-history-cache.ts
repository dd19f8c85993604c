import Database from 'better-sqlite3';
import { chamberKey, validatePositiveInt, type ChamberRef, type RunPointSet, type UChartPoint, type UChartRepository } from '@defender/contracts';
import { cachedPointCount, decodeCachedPoints, encodeCachedPoints, StringTable } from './cache-codec';

/** Options of {@link UChartHistoryCache}. */
export interface UChartHistoryCacheOptions {
  /** Where a miss reads from (the store's U-chart repository). */
  readonly source: Pick<UChartRepository, 'history'>;
  /** Budget for cached history in MiB (`CACHE_SIZE_MB`, default 100 in the seeds); > 0. */
  readonly sizeMb: number;
  /** Newest runs kept per chamber (default 100); `history` calls asking for more bypass the cache. */
  readonly runsPerChamber?: number;
}

/** Counters for `/api/v1/cache/stats` and `defender_cache_hit_rate`. */
export interface UChartCacheStats {
  readonly hits: number;
  readonly misses: number;
  /** hits / (hits + misses), 0 before the first lookup. */
  readonly hitRate: number;
  /** Chambers evicted to stay within the budget. */
  readonly evictions: number;
  /** Chambers cached now. */
  readonly chambers: number;
  /** Accounted bytes of cached history (encoded points + per-run overhead). */
  readonly bytes: number;
  readonly capacityBytes: number;
  /** Bytes SQLite's in-memory database occupies (pages, including free ones it reuses). */
  readonly sqliteBytes: number;
}

interface Entry {
  bytes: number;
  runs: number;
  /** Sequence of the newest cached run; 0 when the chamber has no committed run. */
  newestSeq: number;
  /** The chamber's indicator keys and chart names, referred to by index from its cached runs. */
  readonly strings: StringTable;
}

/**
 * A cached run as the cache hands it out: its points stay encoded until read, and each read of
 * `points` decodes them anew (read once; nothing decoded stays attached to the run, so a history
 * held across a run's awaits holds only buffers). `pointCount` and `flagsUnion` need no decoding.
 */
class CachedRun implements RunPointSet {
  readonly recipe?: string;

  constructor(
    readonly toolId: string,
    readonly chamberId: string,
    readonly sequence: number,
    readonly runId: string,
    readonly epoch: number,
    readonly committedAt: Date,
    recipe: string | null,
    private readonly body: Buffer,
    private readonly strings: StringTable,
    readonly flagsUnion: number,
  ) {
    if (recipe !== null) this.recipe = recipe;
  }

  get points(): UChartPoint[] {
    return decodeCachedPoints(this.body, this.strings);
  }

  get pointCount(): number {
    return cachedPointCount(this.body);
  }
}

function flagsUnionOf(points: readonly UChartPoint[]): number {
  let u = 0;
  for (const p of points) u |= p.flags;
  return u >>> 0;
}

/** Accounted size of one cached run: its encoded points plus a fixed allowance for row keys and index. */
function runBytes(body: Buffer, run: RunPointSet): number {
  return body.length + run.runId.length + (run.recipe?.length ?? 0) + 96;
}

/**
 * The defender's U-chart history cache: the newest `runsPerChamber` committed runs of each chamber
 * in an in-memory SQLite database (outside the V8 heap), bounded by `sizeMb` with least-recently
 * used eviction of whole chambers. A miss (chamber not cached, or cached state older than the
 * caller's high-water mark) loads from the store and caches the result.
 *
 * Keep it coherent by calling {@link record} after every successful commit and
 * {@link invalidate} when the chamber is handed to another defender; passing the owner's
 * `highWaterMark` to {@link history} additionally catches any missed update.
 */
export class UChartHistoryCache {
  private readonly db = new Database(':memory:');
  private readonly lru = new Map<string, Entry>();
  private readonly loading = new Map<string, { promise: Promise<RunPointSet[]>; stale: boolean }>();
  private readonly capacityBytes: number;
  private readonly runsPerChamber: number;
  private totalBytes = 0;
  private hits = 0;
  private misses = 0;
  private evictions = 0;
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly oldest: Database.Statement;
  private readonly deleteRun: Database.Statement;
  private readonly deleteChamber: Database.Statement;

  constructor(private readonly options: UChartHistoryCacheOptions) {
    if (!(Number.isFinite(options.sizeMb) && options.sizeMb > 0)) throw new RangeError(`sizeMb must be > 0, got ${options.sizeMb}`);
    this.runsPerChamber = options.runsPerChamber ?? 100;
    validatePositiveInt('runsPerChamber', this.runsPerChamber);
    this.capacityBytes = Math.floor(options.sizeMb * 1024 * 1024);
    this.db.exec(`CREATE TABLE runs (
      chamber_key TEXT NOT NULL, seq INTEGER NOT NULL, run_id TEXT NOT NULL, epoch INTEGER NOT NULL,
      committed_at INTEGER NOT NULL, recipe TEXT, body BLOB NOT NULL, bytes INTEGER NOT NULL, flags_union INTEGER NOT NULL,
      PRIMARY KEY (chamber_key, seq))`);
    this.insert = this.db.prepare(
      'INSERT OR REPLACE INTO runs (chamber_key, seq, run_id, epoch, committed_at, recipe, body, bytes, flags_union) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.select = this.db.prepare(
      'SELECT seq, run_id, epoch, committed_at, recipe, body, flags_union FROM runs WHERE chamber_key = ? ORDER BY seq DESC LIMIT ?',
    );
    this.oldest = this.db.prepare('SELECT seq, bytes FROM runs WHERE chamber_key = ? ORDER BY seq ASC LIMIT ?');
    this.deleteRun = this.db.prepare('DELETE FROM runs WHERE chamber_key = ? AND seq = ?');
    this.deleteChamber = this.db.prepare('DELETE FROM runs WHERE chamber_key = ?');
  }

  /**
   * The newest `limit` committed runs of the chamber, oldest first (as `UChartRepository.history`).
   * @param options.highWaterMark the caller's known high-water mark; cached history that does not
   *   end there is reloaded.
   * @throws what the source throws on a miss (e.g. StoreUnavailableError); nothing is cached then.
   */
  async history(chamber: ChamberRef, options: { readonly limit: number; readonly highWaterMark?: number }): Promise<RunPointSet[]> {
    validatePositiveInt('limit', options.limit);
    const key = chamberKey(chamber);
    if (options.limit > this.runsPerChamber) {
      this.misses++;
      return this.options.source.history(chamber, { limit: options.limit });
    }
    const entry = this.lru.get(key);
    if (entry && (options.highWaterMark === undefined || options.highWaterMark === entry.newestSeq)) {
      this.hits++;
      this.touch(key, entry);
      return this.read(chamber, key, entry, options.limit);
    }
    this.misses++;
    if (entry) this.drop(key);
    const runs = await this.load(chamber, key);
    return runs.slice(Math.max(0, runs.length - options.limit));
  }

  /**
   * Adds a run just committed by this defender. Ignored when the chamber is not cached (the next
   * miss loads it from the store) or the run is not newer than the cached ones.
   */
  record(run: RunPointSet): void {
    const key = chamberKey(run);
    const inFlight = this.loading.get(key);
    if (inFlight) inFlight.stale = true;
    const entry = this.lru.get(key);
    if (!entry || run.sequence <= entry.newestSeq) return;
    const tableBefore = entry.strings.bytes;
    const body = encodeCachedPoints(run.points, entry.strings);
    const bytes = runBytes(body, run);
    // New strings stay with the chamber (not with this run) until the chamber is dropped.
    const grown = entry.strings.bytes - tableBefore;
    this.db.transaction(() => {
      this.insert.run(key, run.sequence, run.runId, run.epoch, run.committedAt.getTime(), run.recipe ?? null, body, bytes, flagsUnionOf(run.points));
      entry.bytes += bytes + grown;
      entry.runs += 1;
      this.totalBytes += bytes + grown;
      entry.newestSeq = run.sequence;
      const excess = entry.runs - this.runsPerChamber;
      if (excess > 0) {
        for (const old of this.oldest.all(key, excess) as { seq: number; bytes: number }[]) {
          this.deleteRun.run(key, old.seq);
          entry.bytes -= old.bytes;
          entry.runs -= 1;
          this.totalBytes -= old.bytes;
        }
      }
    })();
    this.touch(key, entry);
    this.evictBeyondBudget(key);
  }

  /** Forgets a chamber (e.g. it moved to another defender). */
  invalidate(chamber: ChamberRef): void {
    const key = chamberKey(chamber);
    const inFlight = this.loading.get(key);
    if (inFlight) inFlight.stale = true;
    if (this.lru.has(key)) this.drop(key);
  }

  /** Forgets everything (counters are kept). */
  clear(): void {
    for (const l of this.loading.values()) l.stale = true;
    this.db.exec('DELETE FROM runs');
    this.lru.clear();
    this.totalBytes = 0;
  }

  stats(): UChartCacheStats {
    const lookups = this.hits + this.misses;
    const pageCount = Number(this.db.pragma('page_count', { simple: true }));
    const pageSize = Number(this.db.pragma('page_size', { simple: true }));
    return {
      hits: this.hits,
      misses: this.misses,
      hitRate: lookups === 0 ? 0 : this.hits / lookups,
      evictions: this.evictions,
      chambers: this.lru.size,
      bytes: this.totalBytes,
      capacityBytes: this.capacityBytes,
      sqliteBytes: pageCount * pageSize,
    };
  }

  /** Whether the chamber is cached now (does not count as a lookup). */
  has(chamber: ChamberRef): boolean {
    return this.lru.has(chamberKey(chamber));
  }

  close(): void {
    this.db.close();
  }

  private touch(key: string, entry: Entry): void {
    this.lru.delete(key);
    this.lru.set(key, entry);
  }

  private drop(key: string): void {
    const entry = this.lru.get(key);
    if (!entry) return;
    this.deleteChamber.run(key);
    this.totalBytes -= entry.bytes;
    this.lru.delete(key);
  }

  /** Evicts least recently used chambers (never `keep`) until the budget holds. */
  private evictBeyondBudget(keep: string): void {
    for (const key of this.lru.keys()) {
      if (this.totalBytes <= this.capacityBytes) return;
      if (key === keep) continue;
      this.drop(key);
      this.evictions++;
    }
    // Only `keep` is left and it alone exceeds the budget: do not cache it.
    if (this.totalBytes > this.capacityBytes) {
      this.drop(keep);
      this.evictions++;
    }
  }

  private read(chamber: ChamberRef, key: string, entry: Entry, limit: number): RunPointSet[] {
    const rows = this.select.all(key, limit) as {
      seq: number;
      run_id: string;
      epoch: number;
      committed_at: number;
      recipe: string | null;
      body: Buffer;
      flags_union: number;
    }[];
    const runs = new Array<RunPointSet>(rows.length);
    // Newest first from SQLite; handed out oldest first.
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i] as (typeof rows)[number];
      runs[rows.length - 1 - i] = new CachedRun(
        chamber.toolId,
        chamber.chamberId,
        r.seq,
        r.run_id,
        r.epoch,
        new Date(r.committed_at),
        r.recipe,
        r.body,
        entry.strings,
        r.flags_union,
      );
    }
    return runs;
  }

  /** Loads a chamber from the source (one load per chamber at a time) and caches it unless it went stale meanwhile. */
  private load(chamber: ChamberRef, key: string): Promise<RunPointSet[]> {
    const existing = this.loading.get(key);
    if (existing) return existing.promise;
    const state: { stale: boolean; promise: Promise<RunPointSet[]> } = { stale: false, promise: Promise.resolve([]) };
    // Registered before the source is called, so a record() or invalidate() during the load marks it stale.
    this.loading.set(key, state);
    state.promise = (async () => {
      try {
        const runs = await this.options.source.history(chamber, { limit: this.runsPerChamber });
        if (state.stale) return runs;
        this.store(key, runs);
        // Hand out the cached (still encoded) runs, so the source's decoded points die young.
        const entry = this.lru.get(key);
        return entry ? this.read(chamber, key, entry, this.runsPerChamber) : runs;
      } finally {
        this.loading.delete(key);
      }
    })();
    return state.promise;
  }

  private store(key: string, runs: readonly RunPointSet[]): void {
    if (this.lru.has(key)) this.drop(key);
    const entry: Entry = { bytes: 0, runs: 0, newestSeq: 0, strings: new StringTable() };
    this.db.transaction(() => {
      for (const run of runs) {
        const body = encodeCachedPoints(run.points, entry.strings);
        const bytes = runBytes(body, run);
        this.insert.run(key, run.sequence, run.runId, run.epoch, run.committedAt.getTime(), run.recipe ?? null, body, bytes, flagsUnionOf(run.points));
        entry.bytes += bytes;
        entry.runs += 1;
        entry.newestSeq = Math.max(entry.newestSeq, run.sequence);
      }
    })();
    entry.bytes += entry.strings.bytes;
    this.totalBytes += entry.bytes;
    this.lru.set(key, entry);
    this.evictBeyondBudget(key);
  }
}
