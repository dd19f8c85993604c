import { backoffDelayMs } from '@defender/backoff';
import { ChamberRef, chamberKey, splitChamberKey } from '@defender/contracts';
import { ownerEpoch } from '@defender/membership';
import { ChamberWorker, StreamStatus, WorkerDeps, WorkerOptions } from './chamber-worker';

/** The newest map a defender applied: its version and the chambers it owns in it. */
export interface AppliedMap {
  readonly version: number;
  readonly owned: ReadonlySet<string>;
}

/**
 * After the worker of `chamber` was fenced at `fencedEpoch` (the store holds a newer owner's epoch):
 * the epoch to start it again under, or undefined to leave the chamber to its newer owner.
 *
 * A defender may skip maps (a watch re-created at the last value, a head superseded before it was
 * read). If a skipped map gave the chamber to another defender and a later one gave it back, the
 * ownership diff sees the chamber as kept, its worker goes on under the old map's epoch and is fenced
 * by the other defender's writes; nothing would start it again while the map still names this
 * defender. So: when the newest applied map owns the chamber at a higher epoch than the fenced one,
 * restart under that map. A newer owner this defender has not heard of yet fences the restarted
 * worker once more, at an epoch no longer below the map's: it stops for good until the next map.
 */
export function epochAfterFence(latest: AppliedMap | undefined, chamber: string, fencedEpoch: number, generation: number): number | undefined {
  if (!latest || !latest.owned.has(chamber)) return undefined;
  const epoch = ownerEpoch(latest.version, generation);
  return epoch > fencedEpoch ? epoch : undefined;
}

/** What the supervisor tells its app (logs, metrics) about the workers' lives. */
export interface SupervisorEvents {
  /** A worker ended with an error (a bug or an unexpected store answer): restarted after `delayMs`. */
  workerCrashed?(chamber: string, err: unknown, delayMs: number): void;
  /** A worker fenced under an older map than the newest one that owns the chamber: started again under it. */
  restartedAfterFence?(chamber: string, fencedEpoch: number, epoch: number): void;
  /** Owned chambers of a newly applied map that had no worker (fenced under a map this defender skipped). */
  orphansStarted?(mapVersion: number, chambers: readonly string[]): void;
  /** A chamber left this supervisor (released, or fenced for good). */
  forgotten?(chamber: string): void;
}

/** What a {@link ChamberSupervisor} needs. */
export interface SupervisorDeps {
  /** Shared by every worker: sources, sinks, store, evaluator, cache, limits, clocks. */
  readonly worker: WorkerDeps;
  readonly workerOptions: WorkerOptions;
  /** The claim generation of this defender's stable ID (the low bits of every owner epoch). */
  readonly claimGeneration: () => number;
  /** Runs `fn` after `ms` (unreferenced: a pending restart does not keep the process alive). */
  readonly schedule: (fn: () => void, ms: number) => void;
  /** Uniform [0, 1) for the crash restarts' jitter (`Math.random` in the app, a fixed one in tests). */
  readonly random: () => number;
  /** Forget a released chamber's cached history. */
  readonly invalidate?: (chamber: ChamberRef) => void;
  readonly events?: SupervisorEvents;
  /** Builds a worker (tests may wrap it); default `new ChamberWorker`. */
  readonly createWorker?: (chamber: ChamberRef, epoch: number, deps: WorkerDeps, opts: WorkerOptions) => ChamberWorker;
}

/** A worker's state for the status endpoints. */
export interface WorkerState {
  readonly chamber: string;
  readonly highWaterMark: number;
  readonly busy: boolean;
  readonly epoch: number;
  readonly stream: { readonly streamId: string | undefined; readonly offset: number; readonly status: StreamStatus };
}

/**
 * Restart delays of a crashed worker (@defender/backoff, equal jitter): the first in [500, 1,000) ms,
 * the ceiling doubling per crash in a row up to 30 s, so chambers that crashed together (a store
 * answer every worker choked on) do not come back in lockstep.
 */
const CRASH_BACKOFF = { baseMs: 1_000, maxMs: 30_000 } as const;

/**
 * One {@link ChamberWorker} per owned chamber: membership calls `acquire` / `release` as the
 * assignment map changes and `mapApplied` after each map. A crashed worker is restarted from the
 * store's mark after a growing pause; a fenced one is restarted only when the newest applied map owns
 * its chamber at a higher epoch ({@link epochAfterFence}); otherwise it is left to its newer owner.
 * Notifications reach the workers through `notify`.
 */
export class ChamberSupervisor {
  private readonly workers = new Map<string, ChamberWorker>();
  /** Chambers whose crashed worker waits for its restart (a release cancels it). */
  private readonly restarting = new Set<string>();
  private latestMap: AppliedMap | undefined;
  private draining = false;

  constructor(private readonly deps: SupervisorDeps) {}

  /** Starts workers for `chambers` this supervisor has none for, under `mapVersion`'s epoch. */
  acquire(chambers: readonly string[], mapVersion: number): void {
    if (this.draining) return;
    const epoch = ownerEpoch(mapVersion, this.deps.claimGeneration());
    for (const key of chambers) {
      if (this.workers.has(key)) continue;
      this.restarting.delete(key);
      this.start(splitChamberKey(key), epoch);
    }
  }

  /**
   * The newest applied map: remembered for fenced workers' restarts, and every chamber it owns
   * without a worker (fenced by the owner of a map this defender skipped) is started under it.
   */
  mapApplied(owned: readonly string[], mapVersion: number): void {
    this.rememberMap(owned, mapVersion);
    if (this.draining) return;
    // A crashed worker waiting for its restart is not an orphan: its restart comes.
    const orphaned = owned.filter((key) => !this.workers.has(key) && !this.restarting.has(key));
    if (orphaned.length === 0) return;
    const epoch = ownerEpoch(mapVersion, this.deps.claimGeneration());
    this.deps.events?.orphansStarted?.(mapVersion, orphaned);
    for (const key of orphaned) this.start(splitChamberKey(key), epoch);
  }

  /** Only records the newest applied map (for fenced workers' restarts), starting nothing. */
  rememberMap(owned: readonly string[], mapVersion: number): void {
    this.latestMap = { version: mapVersion, owned: new Set(owned) };
  }

  /** Stops the workers of `chambers` (each finishes its run in progress) and forgets their caches. */
  async release(chambers: readonly string[]): Promise<void> {
    await Promise.all(
      chambers.map(async (key) => {
        this.restarting.delete(key);
        const w = this.workers.get(key);
        if (!w) return;
        this.workers.delete(key);
        this.deps.events?.forgotten?.(key);
        await w.stop();
        this.deps.invalidate?.(w.chamber);
      }),
    );
  }

  /**
   * Stops every worker and starts no more; resolves true when they all stopped within `timeoutMs`,
   * false when runs were still in flight (left to the next owner: fenced).
   */
  async drain(timeoutMs: number): Promise<boolean> {
    this.draining = true;
    const all = Promise.all([...this.workers.values()].map((w) => w.stop()));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stopped = await Promise.race([
      all.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
        timer.unref?.();
      }),
    ]);
    if (timer) clearTimeout(timer);
    this.workers.clear();
    return stopped;
  }

  /** A notification for chamber `key` at stream sequence `seq`; false when no worker runs it. */
  notify(key: string, seq: number): boolean {
    const w = this.workers.get(key);
    w?.notify(seq);
    return w !== undefined;
  }

  /** Every worker looks at its chamber's stream again (a feed restarted, a stream recreated). */
  wakeAll(): void {
    for (const w of this.workers.values()) w.notify(Number.MAX_SAFE_INTEGER);
  }

  has(key: string): boolean {
    return this.workers.has(key);
  }

  /** Workers with a run in flight. */
  inflight(): number {
    let n = 0;
    for (const w of this.workers.values()) if (w.busy) n++;
    return n;
  }

  /** Every running worker's state, by chamber. */
  states(): WorkerState[] {
    return [...this.workers.values()]
      .map((w) => ({ chamber: w.key, highWaterMark: w.mark, busy: w.busy, epoch: w.epoch, stream: w.stream }))
      .sort((a, b) => (a.chamber < b.chamber ? -1 : 1));
  }

  private start(chamber: ChamberRef, epoch: number, crashes = 0): void {
    const create = this.deps.createWorker ?? ((c, e, d, o) => new ChamberWorker(c, e, d, o));
    const worker = create(chamber, epoch, this.deps.worker, this.deps.workerOptions);
    const key = chamberKey(chamber);
    this.workers.set(key, worker);
    worker.start((reason, err) => {
      // Released or replaced meanwhile: nothing to do.
      if (this.workers.get(key) !== worker) return;
      if (reason === 'error' && !this.draining) {
        const delayMs = backoffDelayMs(crashes, { ...CRASH_BACKOFF, random: this.deps.random });
        this.workers.delete(key);
        this.restarting.add(key);
        this.deps.events?.workerCrashed?.(key, err, delayMs);
        this.deps.schedule(() => {
          // Released (or started again by a newer map) meanwhile: not ours to restart.
          if (!this.restarting.delete(key) || this.draining || this.workers.has(key)) return;
          this.start(chamber, epoch, crashes + 1);
        }, delayMs);
      } else if (reason === 'fenced') {
        this.workers.delete(key);
        this.deps.events?.forgotten?.(key);
        const again = this.draining ? undefined : epochAfterFence(this.latestMap, key, epoch, this.deps.claimGeneration());
        if (again !== undefined) {
          this.deps.events?.restartedAfterFence?.(key, epoch, again);
          this.start(chamber, again);
        }
      }
    });
  }
}
