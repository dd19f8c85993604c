import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream } from '@nats-io/jetstream';
import { publishStored } from '@defender/nats-kv';
import { notificationSubject } from '@defender/contracts';
import { SqliteStore } from '@defender/store';
import { rng } from '@defender/infra-harness';
import { chamberKeyOf, makeTrace, notificationOf, RunSpec, SeedChamber } from './workload';

/** One run the publisher got a JetStream acknowledgement for. */
export interface PublishedRun {
  readonly chamber: string;
  readonly index: number;
  readonly runId: string;
  /** Stream sequence from the acknowledgement. */
  readonly seq: number;
  /** When the acknowledgement arrived (epoch ms): the run exists from then on. */
  readonly publishedAt: number;
  readonly shifted: boolean;
  /** Tries the trace write and the publication needed (> 1 during outages). */
  readonly attempts: number;
}

export interface PublisherOptions {
  readonly chambers: readonly SeedChamber[];
  /**
   * Simulated seconds per wall second. A chamber completes a run every context x (1 + idle) seconds
   * of simulated time: at 600x a 1,200 s context is a run every 2.2 s.
   */
  readonly speed: number;
  /** Idle time between runs as a fraction of the context (default 0.1). */
  readonly idleFraction?: number;
  /** Samples per SVID of the stand-in trace (default 120). */
  readonly samples?: number;
  /**
   * Every this many runs (after the warm-up) two consecutive runs carry a shift the WE1 rule flags:
   * two alarmed runs within five, so the second also holds the chamber (default 9).
   */
  readonly shiftEvery?: number;
  /** Traces written ahead of their notifications, runs per chamber (default 3). */
  readonly traceLookahead?: number;
  /** Runs per chamber published at once before the schedule starts: the Phase I history (default 6). */
  readonly warmupRuns?: number;
  readonly seed?: number;
  /** Run-id prefix (unique per cluster). */
  readonly session: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The data-collection layer of the chaos runs (a lean fab-sim): for every chamber, on its own
 * schedule at `speed` x real time, writes the run's trace to the store, then publishes the
 * completion notification on JetStream with the run id as message id. It keeps going through NATS
 * and store outages: a failed write or publication is retried (the message id makes a retried
 * publication that had in fact been stored a duplicate the server drops, acknowledging the original
 * sequence), and runs that fell due meanwhile are published as soon as possible, in order.
 */
export class RunPublisher {
  private readonly runs = new Map<string, PublishedRun[]>();
  private readonly loops: Promise<void>[] = [];
  private stopped = false;
  private paused = false;
  private resumeWaiters: (() => void)[] = [];
  private store: SqliteStore | undefined;
  private failures = 0;
  private lastError: string | undefined;
  private startedAt = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly sqlitePath: string,
    private readonly opts: PublisherOptions,
  ) {
    for (const c of opts.chambers) this.runs.set(chamberKeyOf(c), []);
  }

  private listOf(key: string): PublishedRun[] {
    let l = this.runs.get(key);
    if (!l) {
      l = [];
      this.runs.set(key, l);
    }
    return l;
  }

  /** Wall seconds between two runs of `c`. */
  intervalSeconds(c: SeedChamber): number {
    return (c.contextDurationSeconds * (1 + (this.opts.idleFraction ?? 0.1))) / this.opts.speed;
  }

  /** Runs per wall second over all chambers. */
  get rate(): number {
    return this.opts.chambers.reduce((a, c) => a + 1 / this.intervalSeconds(c), 0);
  }

  get speed(): number {
    return this.opts.speed;
  }

  /** Acknowledged runs by chamber key, in publication order. */
  published(): ReadonlyMap<string, readonly PublishedRun[]> {
    return this.runs;
  }

  total(): number {
    let n = 0;
    for (const r of this.runs.values()) n += r.length;
    return n;
  }

  /** Failed write / publish attempts so far (outages), and the last error. */
  get retries(): { count: number; last: string | undefined } {
    return { count: this.failures, last: this.lastError };
  }

  /** Publishes the warm-up runs of every chamber (awaited), then starts the schedules. */
  async start(): Promise<void> {
    // A short busy timeout: the publisher shares the test process with the store-outage fault,
    // and better-sqlite3 waits synchronously; a failed write is retried asynchronously instead.
    this.store = await SqliteStore.open({ filename: this.sqlitePath, busyTimeoutMs: 50 });
    this.startedAt = Date.now();
    const warmup = this.opts.warmupRuns ?? 6;
    await Promise.all(
      this.opts.chambers.map(async (c) => {
        for (let k = 0; k < warmup && !this.stopped; k++) await this.publishRun(c, k);
      }),
    );
    const u = rng(this.opts.seed ?? 7);
    for (const c of this.opts.chambers) this.loops.push(this.loop(c, warmup, u() * this.intervalSeconds(c) * 1000));
  }

  /** Stops scheduling new runs (runs in flight finish). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    const w = this.resumeWaiters;
    this.resumeWaiters = [];
    for (const f of w) f();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.resume();
    await Promise.all(this.loops);
    await this.store?.close();
    this.store = undefined;
  }

  /** Resolves when every in-flight publication has settled (after {@link pause}). */
  async quiesce(): Promise<void> {
    while (this.inflight > 0) await sleep(20);
  }

  private inflight = 0;

  private async loop(c: SeedChamber, firstIndex: number, offsetMs: number): Promise<void> {
    const intervalMs = this.intervalSeconds(c) * 1000;
    let next = Date.now() + offsetMs;
    for (let k = firstIndex; !this.stopped; k++) {
      for (;;) {
        if (this.stopped) return;
        if (this.paused) {
          await new Promise<void>((r) => this.resumeWaiters.push(r));
          // A pause is a test control, not an outage: no burst of the runs it skipped.
          next = Math.max(next, Date.now());
          continue;
        }
        const wait = next - Date.now();
        if (wait <= 0) break;
        await sleep(Math.min(wait, 250));
      }
      await this.publishRun(c, k);
      next += intervalMs;
      // The data-collection layer stores traces as runs progress; here the next runs' traces are
      // written ahead, so that notifications keep coming for a while when the store goes away.
      await this.writeAhead(c, k + 1);
    }
  }

  /** Per chamber: the highest run index whose trace is stored. */
  private readonly tracesUpTo = new Map<string, number>();

  private async writeAhead(c: SeedChamber, from: number): Promise<void> {
    const key = chamberKeyOf(c);
    const last = from + (this.opts.traceLookahead ?? 3) - 1;
    for (let k = Math.max(from, (this.tracesUpTo.get(key) ?? -1) + 1); k <= last && !this.stopped; k++) {
      try {
        await this.writeTrace(makeTrace(this.spec(c, k)));
        this.tracesUpTo.set(key, k);
      } catch (err) {
        // Best effort: publishRun writes (and retries) a trace that is still missing.
        this.lastError = (err as Error).message;
        return;
      }
    }
  }

  private spec(c: SeedChamber, k: number): RunSpec {
    const every = this.opts.shiftEvery ?? 9;
    const warmup = this.opts.warmupRuns ?? 6;
    const key = chamberKeyOf(c);
    const cycleMs = c.contextDurationSeconds * (1 + (this.opts.idleFraction ?? 0.1)) * 1000;
    return {
      chamber: c,
      index: k,
      runId: `${this.opts.session}-${key.replace(':', '-')}-r${k}`,
      samples: this.opts.samples ?? 120,
      shift: k >= warmup && k % every >= every - 2 ? 8 : 0,
      startMs: Date.UTC(2026, 0, 1) + k * cycleMs,
      seed: Math.imul(k + 1, 2654435761) ^ Math.imul(key.length + k, 40503),
    };
  }

  private async publishRun(c: SeedChamber, k: number): Promise<void> {
    const spec = this.spec(c, k);
    const subject = notificationSubject(c.toolId, c.chamberId);
    const payload = JSON.stringify(notificationOf(spec));
    const trace = makeTrace(spec);
    const js = jetstream(this.nc);
    this.inflight++;
    try {
      let attempts = 0;
      let traceWritten = (this.tracesUpTo.get(chamberKeyOf(c)) ?? -1) >= k;
      for (;;) {
        attempts++;
        try {
          if (!traceWritten) {
            await this.writeTrace(trace);
            traceWritten = true;
            this.tracesUpTo.set(chamberKeyOf(c), Math.max(k, this.tracesUpTo.get(chamberKeyOf(c)) ?? -1));
          }
          // Acknowledged only once the stream holds it (a 2.10 duplicate at sequence 0 is retried).
          const ack = await publishStored(js, subject, payload, spec.runId, { timeout: 2000 });
          this.listOf(chamberKeyOf(c)).push({
            chamber: chamberKeyOf(c),
            index: k,
            runId: spec.runId,
            seq: ack.seq,
            publishedAt: Date.now(),
            shifted: spec.shift !== 0,
            attempts,
          });
          return;
        } catch (err) {
          this.failures++;
          this.lastError = (err as Error).message;
          if (this.stopped && !traceWritten) return;
          await sleep(Math.min(1000, 100 * 2 ** Math.min(attempts, 4)));
        }
      }
    } finally {
      this.inflight--;
    }
  }

  private writeChain: Promise<unknown> = Promise.resolve();
  private storeBackoffUntil = 0;

  /**
   * Trace writes go one at a time (better-sqlite3 is synchronous anyway) with a short busy timeout
   * and a shared backoff after a failure: while the store is locked, this process's event loop is
   * blocked for at most 50 ms every 300 ms, so the watchers' timestamps stay accurate.
   */
  private writeTrace(trace: Parameters<SqliteStore['traces']['write']>[0]): Promise<unknown> {
    const next = this.writeChain.then(async () => {
      const wait = this.storeBackoffUntil - Date.now();
      if (wait > 0) await sleep(wait);
      const store = this.store;
      if (!store) throw new Error('publisher stopped');
      try {
        return await store.traces.write(trace);
      } catch (err) {
        this.storeBackoffUntil = Date.now() + 300;
        throw err;
      }
    });
    this.writeChain = next.catch(() => undefined);
    return next;
  }

  /** Wall time since {@link start}, ms. */
  elapsedMs(): number {
    return this.startedAt ? Date.now() - this.startedAt : 0;
  }
}
