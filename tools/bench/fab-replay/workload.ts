// The fab of the whole-fab replay benchmark, from the fab simulator (tools/fab-sim): its generator
// (tool types, chambers, SVIDs, rates, contexts, recipes), its trace synthesizer and its
// notification format; only the schedule differs (see SteadySchedule).
import type { JetStreamClient } from '@nats-io/jetstream';
import { publishStored } from '@defender/nats-kv';
import { exponentialBackoff } from '@defender/backoff';
import { notificationSubject, type DefenderStore, type RunNotification } from '@defender/contracts';
import {
  generateFab,
  mix,
  rng,
  runIdOf,
  samplesPerRun,
  svidNames,
  synthesizeTrace,
  type ChamberSpec,
  type FabSpec,
} from '@defender/fab-sim';

export { runIdOf, samplesPerRun };
export type { ChamberSpec, FabSpec };

/**
 * A fab of exactly `n` chambers: fab-sim's generator with enough tools, cut after the n-th chamber
 * (the last tool may keep fewer chambers than it was generated with).
 */
export function fabOfChambers(n: number, seed: number): FabSpec {
  let tools = Math.ceil(n / 2.2) + 8;
  let fab = generateFab({ tools, seed });
  while (fab.chambers.length < n) {
    tools = Math.ceil(tools * 1.2);
    fab = generateFab({ tools, seed });
  }
  const chambers = fab.chambers.slice(0, n);
  const keep = new Set(chambers.map((c) => c.key));
  const kept = fab.tools
    .map((t) => ({ ...t, chambers: t.chambers.filter((c) => keep.has(c.key)) }))
    .filter((t) => t.chambers.length > 0);
  return { seed, tools: kept, chambers };
}

/** Mean cycle of a chamber (context + mean overhead), seconds. */
export function cycleSeconds(ch: ChamberSpec): number {
  return ch.contextDurationSeconds + (ch.overheadSeconds[0] + ch.overheadSeconds[1]) / 2;
}

/** Runs per second the whole fab completes in real time. */
export function realTimeRunsPerSecond(fab: FabSpec): number {
  return fab.chambers.reduce((s, c) => s + 1 / cycleSeconds(c), 0);
}

/** Trace samples (all SVIDs) per second the whole fab produces in real time. */
export function realTimeSamplesPerSecond(fab: FabSpec): number {
  return fab.chambers.reduce((s, c) => s + c.weight / cycleSeconds(c), 0);
}

export interface ReplayEvent {
  /** Completion, simulated seconds since the paced replay's origin. */
  readonly t: number;
  /** Index of the chamber in the fab. */
  readonly chamber: number;
  /** Run index of the chamber (warm-up runs first). */
  readonly run: number;
}

/**
 * The chambers' runs in steady state: like fab-sim's `schedule` (back-to-back runs, each the context
 * plus a random 1-5 min overhead), but each chamber's first completion falls anywhere in its first
 * cycle, so the load is the fab's steady rate from t = 0 instead of ramping up over the first
 * cycle. Generated window by window (`take`), so the replay can run as long as it likes.
 */
export class SteadySchedule {
  private readonly next: Float64Array;
  private readonly runNo: Int32Array;
  private readonly draws: (() => number)[];

  constructor(
    private readonly fab: FabSpec,
    seed: number,
    firstRun: number,
  ) {
    this.next = new Float64Array(fab.chambers.length);
    this.runNo = new Int32Array(fab.chambers.length).fill(firstRun);
    this.draws = fab.chambers.map((ch) => {
      const u = rng(mix(seed, ch.index, 0x57ead));
      this.next[ch.index] = u() * (ch.contextDurationSeconds + ch.overheadSeconds[1]);
      return u;
    });
  }

  /** Every completion before `until` (simulated seconds) not taken yet, in time order. */
  take(until: number): ReplayEvent[] {
    const out: ReplayEvent[] = [];
    this.fab.chambers.forEach((ch, i) => {
      const u = this.draws[i];
      if (!u) return;
      const [lo, hi] = ch.overheadSeconds;
      while ((this.next[i] ?? Infinity) < until) {
        out.push({ t: this.next[i] ?? 0, chamber: i, run: this.runNo[i] ?? 0 });
        this.runNo[i] = (this.runNo[i] ?? 0) + 1;
        this.next[i] = (this.next[i] ?? 0) + ch.contextDurationSeconds + lo + u() * (hi - lo);
      }
    });
    return out.sort((a, b) => a.t - b.t || a.chamber - b.chamber);
  }
}

/** Caches each chamber's SVID names (fab-sim's naming). */
export class SvidNames {
  private readonly names = new Map<number, string[]>();
  of(ch: ChamberSpec): string[] {
    let n = this.names.get(ch.index);
    if (!n) {
      n = svidNames(ch);
      this.names.set(ch.index, n);
    }
    return n;
  }
}

export interface PublishedRun {
  readonly seq: number;
  /** Epoch ms just before the notification's JetStream publish (the trace was already in the store). */
  readonly publishedAt: number;
}

export interface RunRefs {
  readonly runId: string;
  readonly runIndex: number;
  /** Completion (end of the context), epoch seconds. */
  readonly endSeconds: number;
}

/**
 * The first half of fab-sim's `Simulator.publishRun`: synthesize the run's trace and write it to the
 * store. Returns the samples written (all SVIDs). No excursions: the replay measures throughput.
 */
export async function writeRunTrace(store: DefenderStore, ch: ChamberSpec, run: RunRefs): Promise<number> {
  const startSeconds = run.endSeconds - ch.contextDurationSeconds;
  const trace = synthesizeTrace(ch, { runId: run.runId, runIndex: run.runIndex, startSeconds });
  await retryStore(() => store.traces.write(trace));
  return samplesPerRun(ch) * ch.svidCount;
}

/** Retries of store operations so far ({@link retryStore}), for the report. */
export const storeRetries = { count: 0 };

/**
 * Runs a store operation again after an error the store marks retryable (a write timeout of an
 * overloaded Cassandra node, a busy SQLite file), as fab-sim's simulator does: up to 20 attempts,
 * exponential backoff from 100 ms to 5 s. Trace writes and deletes are idempotent (keyed by run).
 */
export async function retryStore<T>(op: () => Promise<T>): Promise<T> {
  const backoff = exponentialBackoff({ baseMs: 100, maxMs: 5000, random: Math.random });
  for (let attempt = 1; ; attempt++) {
    try {
      return await op();
    } catch (err) {
      if (attempt >= 20 || (err as { retryable?: unknown }).retryable !== true) throw err;
      storeRetries.count++;
      await new Promise((r) => setTimeout(r, backoff.next()));
    }
  }
}

/**
 * The second half: publish the completion notification (fab-sim's format, deduplicated by msgID),
 * once the trace is in the store.
 */
export async function publishNotification(
  js: JetStreamClient,
  names: SvidNames,
  ch: ChamberSpec,
  run: RunRefs,
): Promise<PublishedRun> {
  const startSeconds = run.endSeconds - ch.contextDurationSeconds;
  const publishedAt = Date.now();
  const notification: RunNotification = {
    schema: 1,
    toolId: ch.toolId,
    chamberId: ch.chamberId,
    runId: run.runId,
    recipe: ch.recipe.name,
    contextWindow: {
      start: new Date(startSeconds * 1000).toISOString(),
      end: new Date(run.endSeconds * 1000).toISOString(),
    },
    svids: names.of(ch),
    trace: { store: 'default', samples: samplesPerRun(ch) },
    completedAt: new Date(run.endSeconds * 1000).toISOString(),
    publishedAt: new Date(publishedAt).toISOString(),
  };
  const ack = await publishStored(js, notificationSubject(ch.toolId, ch.chamberId), JSON.stringify(notification), `${ch.key}:${run.runId}`);
  return { seq: ack.seq, publishedAt };
}
