import type { ChamberMetadata, ChamberMetadataRepository } from '@defender/contracts';
import { chamberKey } from '@defender/contracts';

/** Milliseconds since some epoch; injected so tests control time. */
export type Clock = () => number;

/**
 * A value loaded on demand and reused for `ttlMs`. Concurrent `get()`s share one load; a failed
 * load is not cached (the next `get()` retries) and its error reaches every waiting caller.
 */
export class TtlCache<T> {
  private value: { data: T; loadedAt: number } | undefined;
  private inFlight: Promise<T> | undefined;
  private loads = 0;

  constructor(
    private readonly load: () => Promise<T>,
    private readonly ttlMs: number,
    private readonly clock: Clock,
  ) {
    if (!(Number.isFinite(ttlMs) && ttlMs >= 0)) throw new RangeError(`ttlMs must be >= 0, got ${ttlMs}`);
  }

  /** The cached value while fresh (age < ttl), else a new load. */
  get(): Promise<T> {
    const v = this.value;
    if (v && this.clock() - v.loadedAt < this.ttlMs) return Promise.resolve(v.data);
    if (this.inFlight) return this.inFlight;
    const started = this.clock();
    this.loads++;
    const p = this.load().then(
      (data) => {
        this.value = { data, loadedAt: started };
        return data;
      },
    );
    this.inFlight = p;
    const clear = (): void => {
      if (this.inFlight === p) this.inFlight = undefined;
    };
    p.then(clear, clear);
    return p;
  }

  /** The cached value regardless of age, without loading. */
  peek(): T | undefined {
    return this.value?.data;
  }

  /** Age of the cached value in ms (undefined when nothing is cached). */
  ageMs(): number | undefined {
    return this.value ? this.clock() - this.value.loadedAt : undefined;
  }

  /** Drops the cached value; the next get() loads. */
  invalidate(): void {
    this.value = undefined;
  }

  /** Loads started so far. */
  get loadCount(): number {
    return this.loads;
  }
}

/**
 * The controller's chamber weights (`chamber_metadata`), keyed `<tool>:<chamber>`, reloaded at most
 * once per `ttlSeconds` (`WEIGHT_CACHE_TTL_SECONDS`, 3600 in the seeds).
 */
export class ChamberWeightCache {
  private readonly cache: TtlCache<ReadonlyMap<string, ChamberMetadata>>;

  constructor(repository: Pick<ChamberMetadataRepository, 'list'>, ttlSeconds: number, clock: Clock) {
    this.cache = new TtlCache(
      async () => {
        const rows = await repository.list();
        return new Map(rows.map((m) => [chamberKey(m), m]));
      },
      ttlSeconds * 1000,
      clock,
    );
  }

  /** Chamber key -> metadata. */
  metadata(): Promise<ReadonlyMap<string, ChamberMetadata>> {
    return this.cache.get();
  }

  /** Chamber key -> weight. */
  async weights(): Promise<Map<string, number>> {
    const m = await this.cache.get();
    return new Map([...m].map(([k, v]) => [k, v.weight]));
  }

  /** Forces a reload on the next call (e.g. right after `recomputeWeights`). */
  invalidate(): void {
    this.cache.invalidate();
  }

  get loadCount(): number {
    return this.cache.loadCount;
  }
}
