import { chamberKey, validatePositiveInt, type ChamberRef, type RunPointSet, type UChartPoint, type UChartRepository } from '@defender/contracts';
import { BlockArena, type ArenaSlot } from './block-arena';
import { cachedPointCount, decodeCachedPoints, encodeCachedPoints, StringTable } from './cache-codec';

/** Options of {@link UChartHistoryCache}. */
export interface UChartHistoryCacheOptions {
  /** Where a miss reads from (the store's U-chart repository). */
  readonly source: Pick<UChartRepository, 'history'>;
  /** Budget for cached history in MiB (`CACHE_SIZE_MB`, default 100 in the seeds); > 0. */
  readonly sizeMb: number;
  /** Newest runs kept per chamber (default 100); `history` calls asking for more bypass the cache. */
  readonly runsPerChamber?: number;
  /** Block size of the arena holding encoded points (default 512 bytes; see {@link BlockArena}). */
  readonly blockBytes?: number;
  /**
   * Points the cache does not keep (default: none): runs read through the cache come without them,
   * and a caller that needs them reads with `allPoints` (from the source). A run all of whose points
   * match is kept whole, so a run never looks point-less (dead-lettered) because of it. The defender
   * leaves out what only a baseline fit reads (the pipeline's `POINT_FLAGS.BASELINE_DATA`; ADR 0015).
   */
  readonly leaveOut?: (point: UChartPoint) => boolean;
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
  /** Bytes of memory holding the encoded points (the block arena, allocated as it fills; <= capacityBytes). */
  readonly arenaBytes: number;
}

/** One cached run: its encoded points in the arena, the rest here. */
/** What the cache keeps of a run besides its encoded points (in its slot, or with a loaded run). */
interface RunHeader {
  readonly runId: string;
  readonly epoch: number;
  readonly committedAtMs: number;
  /** Index of the recipe in the chamber's string table, or -1 for none. */
  readonly recipe: number;
  readonly flagsUnion: number;
}

interface RunSlot extends ArenaSlot, RunHeader {
  readonly seq: number;
  /** Accounted bytes: the arena blocks plus {@link RUN_OVERHEAD_BYTES} and the run id. */
  readonly bytes: number;
}

interface Entry {
  bytes: number;
  /** Cached runs, oldest first. */
  readonly runs: RunSlot[];
  /** Sequence of the newest cached run; 0 when the chamber has no committed run. */
  newestSeq: number;
  /** The chamber's indicator keys, chart names and recipes, referred to by index from its cached runs. */
  readonly strings: StringTable;
}

/** Allowance for a cached run's bookkeeping on the V8 heap (its slot object), besides its run id. */
const RUN_OVERHEAD_BYTES = 160;

/**
 * A cached run as the cache hands it out: its points stay encoded until read, and each read of
 * `points` decodes them anew (read once; nothing decoded stays attached to the run, so a history
 * held across a run's awaits holds only buffers). `pointCount` and `flagsUnion` need no decoding.
 */
class CachedRun implements RunPointSet {
  readonly toolId: string;
  readonly chamberId: string;
  readonly runId: string;
  readonly epoch: number;
  readonly committedAt: Date;
  readonly recipe?: string;
  readonly flagsUnion: number;

  constructor(
    chamber: ChamberRef,
    readonly sequence: number,
    header: RunHeader,
    private readonly body: Buffer,
    private readonly strings: StringTable,
  ) {
    this.toolId = chamber.toolId;
    this.chamberId = chamber.chamberId;
    this.runId = header.runId;
    this.epoch = header.epoch;
    this.committedAt = new Date(header.committedAtMs);
    if (header.recipe >= 0) this.recipe = strings.at(header.recipe);
    this.flagsUnion = header.flagsUnion;
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

/**
 * The defender's U-chart history cache: the newest `runsPerChamber` committed runs of each chamber,
 * their points encoded in a block arena (outside the V8 heap), bounded by `sizeMb` with least
 * recently used eviction of whole chambers. A miss (chamber not cached, or cached state older than
 * the caller's high-water mark) loads from the store and caches the result.
 *
 * Memory: the arena allocates its blocks in chunks as it fills and reuses freed blocks for runs of
 * any size, so the cache's memory is its budget at most, whatever the churn (an in-memory SQLite
 * database, used before, grew to about 1.4 times its budget in the C heap under the evictions of a
 * whole-fab replay). What is accounted per run: its arena blocks, its run id and a fixed
 * allowance for its slot on the V8 heap; per chamber: its string table.
 *
 * Keep it coherent by calling {@link record} after every successful commit and
 * {@link invalidate} when the chamber is handed to another defender; passing the owner's
 * `highWaterMark` to {@link history} additionally catches any missed update.
 */
export class UChartHistoryCache {
  private readonly arena: BlockArena;
  private readonly lru = new Map<string, Entry>();
  private readonly loading = new Map<string, { promise: Promise<RunPointSet[]>; stale: boolean }>();
  private readonly capacityBytes: number;
  private readonly runsPerChamber: number;
  private totalBytes = 0;
  private hits = 0;
  private misses = 0;
  private evictions = 0;

  constructor(private readonly options: UChartHistoryCacheOptions) {
    if (!(Number.isFinite(options.sizeMb) && options.sizeMb > 0)) throw new RangeError(`sizeMb must be > 0, got ${options.sizeMb}`);
    this.runsPerChamber = options.runsPerChamber ?? 100;
    validatePositiveInt('runsPerChamber', this.runsPerChamber);
    this.capacityBytes = Math.floor(options.sizeMb * 1024 * 1024);
    const blockBytes = options.blockBytes ?? 512;
    // A budget smaller than a block caches nothing, but is valid.
    this.arena = new BlockArena({ capacityBytes: Math.max(this.capacityBytes, blockBytes), blockBytes, chunkBytes: Math.max(blockBytes, 4 * 1024 * 1024) });
  }

  /**
   * The newest `limit` committed runs of the chamber, oldest first (as `UChartRepository.history`).
   * @param options.highWaterMark the caller's known high-water mark; cached history that does not
   *   end there is reloaded.
   * @param options.allPoints the runs with every point, also those the cache leaves out
   *   ({@link UChartHistoryCacheOptions.leaveOut}): read from the source, as a read of more runs
   *   than the cache keeps.
   * @throws what the source throws on a miss (e.g. StoreUnavailableError); nothing is cached then.
   */
  async history(chamber: ChamberRef, options: { readonly limit: number; readonly highWaterMark?: number; readonly allPoints?: boolean }): Promise<RunPointSet[]> {
    validatePositiveInt('limit', options.limit);
    const key = chamberKey(chamber);
    if (options.limit > this.runsPerChamber || (options.allPoints === true && this.options.leaveOut !== undefined)) {
      this.misses++;
      return this.options.source.history(chamber, { limit: options.limit });
    }
    const entry = this.lru.get(key);
    if (entry && (options.highWaterMark === undefined || options.highWaterMark === entry.newestSeq)) {
      this.hits++;
      this.touch(key, entry);
      return this.read(chamber, entry, options.limit);
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
    const body = encodeCachedPoints(this.kept(run.points), entry.strings);
    const recipe = run.recipe === undefined ? -1 : entry.strings.nameId(run.recipe);
    entry.strings.release();
    // New strings stay with the chamber (not with this run) until the chamber is dropped.
    const grown = entry.strings.bytes - tableBefore;
    entry.bytes += grown;
    this.totalBytes += grown;
    entry.newestSeq = run.sequence;
    const excess = entry.runs.length + 1 - this.runsPerChamber;
    if (excess > 0) for (const old of entry.runs.splice(0, excess)) this.release(entry, old);
    this.touch(key, entry);
    const bytes = this.runBytes(body, run);
    if (entry.bytes + bytes > this.capacityBytes) {
      // This chamber alone would exceed the budget: do not cache it.
      this.drop(key);
      this.evictions++;
      return;
    }
    this.evictOthers(key, bytes);
    entry.runs.push(this.slot(body, run, recipe, bytes));
    entry.bytes += bytes;
    this.totalBytes += bytes;
  }

  /** Forgets a chamber (e.g. it moved to another defender). */
  invalidate(chamber: ChamberRef): void {
    const key = chamberKey(chamber);
    const inFlight = this.loading.get(key);
    if (inFlight) inFlight.stale = true;
    if (this.lru.has(key)) this.drop(key);
  }

  /** Forgets everything and frees the arena's memory (counters are kept). */
  clear(): void {
    for (const l of this.loading.values()) l.stale = true;
    this.lru.clear();
    this.arena.clear();
    this.totalBytes = 0;
  }

  stats(): UChartCacheStats {
    const lookups = this.hits + this.misses;
    return {
      hits: this.hits,
      misses: this.misses,
      hitRate: lookups === 0 ? 0 : this.hits / lookups,
      evictions: this.evictions,
      chambers: this.lru.size,
      bytes: this.totalBytes,
      capacityBytes: this.capacityBytes,
      arenaBytes: this.arena.allocatedBytes,
    };
  }

  /** Whether the chamber is cached now (does not count as a lookup). */
  has(chamber: ChamberRef): boolean {
    return this.lru.has(chamberKey(chamber));
  }

  /** Frees the cache's memory; same as {@link clear}. */
  close(): void {
    this.clear();
  }

  /** The points of a run the cache keeps (see {@link UChartHistoryCacheOptions.leaveOut}). */
  private kept(points: readonly UChartPoint[]): readonly UChartPoint[] {
    const leaveOut = this.options.leaveOut;
    if (!leaveOut) return points;
    const kept = points.filter((p) => !leaveOut(p));
    return kept.length > 0 ? kept : points;
  }

  private runBytes(body: Buffer, run: RunPointSet): number {
    return this.arena.bytesFor(body.length) + RUN_OVERHEAD_BYTES + run.runId.length;
  }

  /** Writes a run's encoded points to the arena; the caller has made room for `bytes`. */
  private slot(body: Buffer, run: RunPointSet, recipe: number, bytes: number): RunSlot {
    const written = this.arena.write(body);
    // The budget covers every run's blocks, and the arena is as large as the budget.
    if (!written) throw new Error(`history cache arena is full with ${this.totalBytes} of ${this.capacityBytes} bytes accounted (a bug)`);
    return {
      head: written.head,
      length: written.length,
      seq: run.sequence,
      runId: run.runId,
      epoch: run.epoch,
      committedAtMs: run.committedAt.getTime(),
      recipe,
      flagsUnion: flagsUnionOf(run.points),
      bytes,
    };
  }

  private release(entry: Entry, slot: RunSlot): void {
    this.arena.release(slot);
    entry.bytes -= slot.bytes;
    this.totalBytes -= slot.bytes;
  }

  private touch(key: string, entry: Entry): void {
    this.lru.delete(key);
    this.lru.set(key, entry);
  }

  private drop(key: string): void {
    const entry = this.lru.get(key);
    if (!entry) return;
    for (const slot of entry.runs) this.arena.release(slot);
    this.totalBytes -= entry.bytes;
    this.lru.delete(key);
  }

  /** Evicts least recently used chambers (never `keep`) until `bytes` more fit in the budget. */
  private evictOthers(keep: string, bytes: number): void {
    for (const key of this.lru.keys()) {
      if (this.totalBytes + bytes <= this.capacityBytes) return;
      if (key === keep) continue;
      this.drop(key);
      this.evictions++;
    }
  }

  /** The newest `limit` cached runs, oldest first, their encoded points copied out of the arena into one buffer. */
  private read(chamber: ChamberRef, entry: Entry, limit: number): RunPointSet[] {
    const from = Math.max(0, entry.runs.length - limit);
    let total = 0;
    for (let i = from; i < entry.runs.length; i++) total += (entry.runs[i] as RunSlot).length;
    const buf = Buffer.allocUnsafe(total);
    const runs = new Array<RunPointSet>(entry.runs.length - from);
    for (let i = from, off = 0; i < entry.runs.length; i++) {
      const r = entry.runs[i] as RunSlot;
      this.arena.read(r, buf, off);
      runs[i - from] = new CachedRun(chamber, r.seq, r, buf.subarray(off, off + r.length), entry.strings);
      off += r.length;
    }
    return runs;
  }

  /**
   * Loads a chamber from the source (one load per chamber at a time) and caches it unless it went
   * stale meanwhile. The runs are read a page at a time, newest first, and each page is encoded
   * before the next is read: a chamber with thousands of points per run never has its whole history
   * decoded at once.
   */
  private load(chamber: ChamberRef, key: string): Promise<RunPointSet[]> {
    const existing = this.loading.get(key);
    if (existing) return existing.promise;
    const state: { stale: boolean; promise: Promise<RunPointSet[]> } = { stale: false, promise: Promise.resolve([]) };
    // Registered before the source is called, so a record() or invalidate() during the load marks it stale.
    this.loading.set(key, state);
    state.promise = (async () => {
      try {
        const strings = new StringTable();
        const loaded: EncodedRun[] = [];
        let before: number | undefined;
        while (loaded.length < this.runsPerChamber) {
          const limit = Math.min(LOAD_PAGE_RUNS, this.runsPerChamber - loaded.length);
          const page = await this.options.source.history(chamber, { limit, ...(before !== undefined ? { beforeSequence: before } : {}) });
          for (const run of page) {
            loaded.push({
              sequence: run.sequence,
              runId: run.runId,
              epoch: run.epoch,
              committedAtMs: run.committedAt.getTime(),
              recipe: run.recipe === undefined ? -1 : strings.nameId(run.recipe),
              body: encodeCachedPoints(this.kept(run.points), strings),
              flagsUnion: flagsUnionOf(run.points),
            });
          }
          if (page.length < limit) break;
          before = Math.min(...page.map((r) => r.sequence));
        }
        strings.release();
        // Oldest first.
        loaded.sort((a, b) => a.sequence - b.sequence);
        if (!state.stale) this.store(key, loaded, strings);
        const entry = state.stale ? undefined : this.lru.get(key);
        return entry ? this.read(chamber, entry, this.runsPerChamber) : uncached(chamber, loaded, strings);
      } finally {
        this.loading.delete(key);
      }
    })();
    return state.promise;
  }

  private store(key: string, runs: readonly EncodedRun[], strings: StringTable): void {
    if (this.lru.has(key)) this.drop(key);
    let total = strings.bytes;
    const sizes = runs.map((run) => this.arena.bytesFor(run.body.length) + RUN_OVERHEAD_BYTES + run.runId.length);
    for (const b of sizes) total += b;
    if (total > this.capacityBytes) {
      // This chamber alone exceeds the budget: do not cache it.
      this.evictions++;
      return;
    }
    this.evictOthers(key, total);
    const entry: Entry = { bytes: total, runs: [], newestSeq: 0, strings };
    runs.forEach((run, i) => {
      const written = this.arena.write(run.body);
      if (!written) throw new Error(`history cache arena is full with ${this.totalBytes} of ${this.capacityBytes} bytes accounted (a bug)`);
      entry.runs.push({ head: written.head, length: written.length, seq: run.sequence, runId: run.runId, epoch: run.epoch, committedAtMs: run.committedAtMs, recipe: run.recipe, flagsUnion: run.flagsUnion, bytes: sizes[i] as number });
      entry.newestSeq = Math.max(entry.newestSeq, run.sequence);
    });
    this.totalBytes += total;
    this.lru.set(key, entry);
  }
}

/** Runs a load reads per call to the source. */
const LOAD_PAGE_RUNS = 10;

/** A run read by a load, its points encoded (not yet in the arena). */
interface EncodedRun extends RunHeader {
  readonly sequence: number;
  readonly body: Buffer;
}

/** Loaded runs handed out without caching them (a chamber larger than the whole budget). */
function uncached(chamber: ChamberRef, runs: readonly EncodedRun[], strings: StringTable): RunPointSet[] {
  return runs.map((r) => new CachedRun(chamber, r.sequence, r, r.body, strings));
}
