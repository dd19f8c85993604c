import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { equipmentEventSubject, notificationSubject, StoreUnavailableError, strategyScope, strategyScopeKind, type JsonObject } from '@defender/contracts';
import { describeWithInfra, startSecuredNatsServer, waitFor } from '@defender/infra-harness';
import { DEFAULT_STREAM_SETTINGS, ensureStreams, lastMessageId, NotificationReader, publishOnce, STREAMS, watchNotifications, type StreamSettings } from '@defender/nats-kv';
import { ByteBudget, ChamberWorker, createRunEvaluator, isBaselineData, needsMoreHistory, RunEvaluator, Semaphore, WorkerDeps, type EvaluationInput, type MoreHistoryNeeded, type RunEvaluation } from '@defender/pipeline';
import { releaseTraceMemory, SqliteStore, UChartHistoryCache } from '@defender/store';
import { normalDeviate, seededRandom } from '@defender/hashing';

const chamber = { toolId: 't1', chamberId: 'c1' };
const SVIDS = ['pressure'];

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

/**
 * A worker's monotonic clock and sleep on which a test makes time pass: real time plus what
 * `advance` added (an outage, a long fit), and sleeps that end when either reaches their end. What
 * the worker's timeouts see is then what the test says happened, however loaded the machine is.
 * `sleeping` counts the sleeps not yet ended.
 */
function steppedClock(): { monotonic: () => number; sleep: WorkerDeps['sleep']; advance(ms: number): void; readonly sleeping: number } {
  let skew = 0;
  const sleepers = new Set<{ until: number; end: () => void }>();
  const monotonic = () => performance.now() + skew;
  return {
    monotonic,
    sleep: (ms, signal) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const end = () => {
          clearTimeout(timer);
          sleepers.delete(sleeper);
          signal.removeEventListener('abort', end);
          resolve();
        };
        const sleeper = { until: monotonic() + ms, end };
        const timer = setTimeout(end, ms);
        sleepers.add(sleeper);
        signal.addEventListener('abort', end, { once: true });
      }),
    advance: (ms) => {
      skew += ms;
      const t = monotonic();
      for (const s of [...sleepers]) if (s.until <= t) s.end();
    },
    get sleeping() {
      return sleepers.size;
    },
  };
}

/**
 * A private nats-server (TLS and users as production runs it; the fixture's user plays the publisher
 * and the defender) with the streams and a SQLite store holding {@link chamber}'s metadata, for
 * `run`; everything is closed and removed afterwards.
 */
async function withChamber(
  prefix: string,
  run: (w: { nc: NatsConnection; store: SqliteStore; reader: NotificationReader; cache: UChartHistoryCache }) => Promise<void>,
  streams: StreamSettings = DEFAULT_STREAM_SETTINGS,
): Promise<void> {
  const nats = await startSecuredNatsServer();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const nc = await connect(nats.connectOptions());
  const store = await SqliteStore.open({ filename: join(dir, 'd.db') });
  try {
    await ensureStreams(nc, streams);
    await store.chamberMetadata.upsert({ ...chamber, svidCount: 1, collectionFreqHz: 1, contextDurationSeconds: 60, weight: 60, lastUpdated: new Date(), source: 'configured', observedRuns: 0 });
    const reader = await NotificationReader.open(nc);
    const cache = new UChartHistoryCache({ source: store.uchart, sizeMb: 8 });
    try {
      await run({ nc, store, reader, cache });
    } finally {
      cache.close();
    }
  } finally {
    await store.close();
    await nc.close();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `store` whose `chamberState.commitRun` first awaits `before` (which may throw, as a failing store would). */
function withCommitRun(store: SqliteStore, before: () => void | Promise<void>): SqliteStore {
  const flaky = Object.create(store) as SqliteStore;
  Object.defineProperty(flaky, 'chamberState', {
    value: {
      get: (ref: Parameters<typeof store.chamberState.get>[0]) => store.chamberState.get(ref),
      claim: (...a: Parameters<typeof store.chamberState.claim>) => store.chamberState.claim(...a),
      commitRun: async (input: Parameters<typeof store.chamberState.commitRun>[0]) => {
        await before();
        return store.chamberState.commitRun(input);
      },
      appliedRun: (...a: Parameters<typeof store.chamberState.appliedRun>) => store.chamberState.appliedRun(...a),
      bindStream: (...a: Parameters<typeof store.chamberState.bindStream>) => store.chamberState.bindStream(...a),
    },
  });
  return flaky;
}

/** A worker's dependencies as the defender wires them, its dead letters collected in `deadLetters`. */
function workerDeps(w: { nc: NatsConnection; reader: NotificationReader; cache: UChartHistoryCache; store: SqliteStore; deadLetters: string[]; now: () => Date }): WorkerDeps {
  return {
    source: w.reader,
    sink: {
      publish: async (s, p, id) => {
        if (s.startsWith('dc.dead.')) w.deadLetters.push(`${s}: ${p.slice(0, 300)}`);
        await publishOnce(w.nc, s, p, id);
      },
    },
    store: w.store,
    evaluator: createRunEvaluator(),
    cache: w.cache,
    semaphore: new Semaphore(4),
    // As the defender runs it: a retried attempt reads its trace again.
    releaseTrace: releaseTraceMemory,
    now: w.now,
    monotonic: () => performance.now(),
    sleep,
  };
}

/** Writes the trace of run `r<k>` of {@link chamber} (60 samples) and publishes its notification; returns the stream sequence. */
async function publishRunOf(nc: NatsConnection, store: SqliteStore, k: number): Promise<number> {
  const values = new Float64Array(60).map((_, i) => 50 + Math.sin(i + k));
  await store.traces.write({ ...chamber, runId: `r${k}`, timing: { kind: 'regular', startSeconds: 1_800_000_000 + k * 60, frequencyHz: 1 }, svids: new Map([[SVIDS[0]!, values]]), steps: [] });
  const start = new Date(Date.UTC(2026, 10, 25, 0, k)).toISOString();
  const body = { schema: 1, ...chamber, runId: `r${k}`, recipe: 'R', contextWindow: { start, end: start }, svids: SVIDS, trace: { store: 'default' }, completedAt: start };
  return (await jetstream(nc).publish(notificationSubject(chamber.toolId, chamber.chamberId), JSON.stringify(body))).seq;
}

/**
 * Guarantee 1 (exclusive) with real NATS and a real SQLite store, deterministically: worker A owns
 * the chamber with epoch 1; worker B claims it with epoch 2 while A is idle; A's next write is
 * rejected by the store, A stops, and B applies every later run exactly once.
 */
describeWithInfra(['nats'], 'ChamberWorker fencing against real NATS and SQLite', () => {
  it('a deposed worker cannot write; the new owner resumes exactly after the high-water mark', async () => {
    await withChamber('worker-fence-', async ({ nc, store, reader, cache }) => {
      const deps = (): WorkerDeps => ({
        source: reader,
        sink: { publish: async (s, p, id) => void (await publishOnce(nc, s, p, id)) },
        store,
        evaluator: createRunEvaluator(),
        cache,
        semaphore: new Semaphore(4),
        now: () => new Date(),
        monotonic: () => performance.now(),
        sleep,
      });
      const opts = { processTimeoutMs: 10_000, maxAttempts: 3, idlePollMs: 60_000, maxTracePoints: 1_000_000, maxOutageBackoffMs: 1000 };
      const publishRun = (k: number) => publishRunOf(nc, store, k);

      const a = new ChamberWorker(chamber, 1, deps(), { ...opts, ownerId: 'defender-0' });
      const b = new ChamberWorker(chamber, 2, deps(), { ...opts, ownerId: 'defender-1' });
      const exits: Record<string, string> = {};
      const feed = await watchNotifications(nc, (_s, seq) => {
        if (!a.stopped) a.notify(seq);
        if (!b.stopped) b.notify(seq);
      });
      a.start((r) => (exits['a'] = r));
      const seqs: number[] = [];
      for (let k = 0; k < 3; k++) seqs.push(await publishRun(k));
      await waitFor('A applied 3', async () => a.mark === seqs[2], 20_000);

      b.start((r) => (exits['b'] = r));
      await waitFor('B claimed', async () => (await store.chamberState.get(chamber))?.ownerEpoch === 2, 20_000);
      for (let k = 3; k < 8; k++) seqs.push(await publishRun(k));
      await waitFor('B applied all', async () => b.mark === seqs[7], 20_000);
      await waitFor('A fenced', async () => exits['a'] === 'fenced', 20_000);

      const runs = await store.uchart.history(chamber, { limit: 100 });
      expect(runs.map((r) => r.sequence)).toEqual(seqs);
      expect(runs.map((r) => r.epoch)).toEqual([1, 1, 1, 2, 2, 2, 2, 2]);
      expect(a.mark).toBe(seqs[2]);
      await b.stop();
      expect(exits['b']).toBe('stopped');
      await feed.stop();
    });
  });
});

/**
 * TRACE_MEMORY_MB: runs of many chambers in flight at once hold at most the budget's worth of
 * traces (reads overlapping as a remote store's do), a trace larger than the whole budget still runs
 * (alone), and every run is applied once.
 */
describeWithInfra(['nats'], 'ChamberWorker trace memory budget against real NATS and SQLite', () => {
  it('never holds more traces than the budget allows, and applies every run', async () => {
    const nats = await startSecuredNatsServer();
    const dir = mkdtempSync(join(tmpdir(), 'worker-budget-'));
    const nc = await connect(nats.connectOptions());
    const store = await SqliteStore.open({ filename: join(dir, 'd.db') });
    const chambers = Array.from({ length: 6 }, (_, i) => ({ toolId: 't1', chamberId: `c${i}` }));
    const SAMPLES = 4096; // one SVID, f64: 32 KiB per trace
    const budget = new ByteBudget(2 * SAMPLES * 8); // room for two traces
    let held = 0;
    let peakHeld = 0;
    let peakBytes = 0;
    const workers: ChamberWorker[] = [];
    try {
      await ensureStreams(nc);
      for (const ch of chambers) {
        await store.chamberMetadata.upsert({ ...ch, svidCount: 1, collectionFreqHz: 1, contextDurationSeconds: 60, weight: 60, lastUpdated: new Date(), source: 'configured', observedRuns: 0 });
      }
      const reader = await NotificationReader.open(nc);
      const cache = new UChartHistoryCache({ source: store.uchart, sizeMb: 8 });
      const evaluator = createRunEvaluator();
      const countingEvaluator = around(evaluator, (input) => {
        try {
          return evaluator.evaluate(input);
        } finally {
          held--;
        }
      });
      // The real store, whose first trace read waits until a second one is in flight (as reads of a
      // remote store overlap): two chambers hold traces at once however the machine schedules them.
      let overlapped: () => void = () => undefined;
      const overlap = new Promise<void>((r) => (overlapped = r));
      let firstRead = true;
      const overlappingStore = Object.create(store) as typeof store;
      Object.defineProperty(overlappingStore, 'traces', {
        value: {
          ...store.traces,
          read: async (run: Parameters<typeof store.traces.read>[0]) => {
            held++;
            peakHeld = Math.max(peakHeld, held);
            peakBytes = Math.max(peakBytes, budget.inUse);
            if (held >= 2) overlapped();
            if (firstRead) {
              firstRead = false;
              await overlap;
            }
            return store.traces.read(run);
          },
        },
      });
      const semaphore = new Semaphore(8);
      const deps = (): WorkerDeps => ({
        source: reader,
        sink: { publish: async (s, p, id) => void (await publishOnce(nc, s, p, id)) },
        store: overlappingStore,
        evaluator: countingEvaluator,
        cache,
        semaphore,
        traceBudget: budget,
        now: () => new Date(),
        monotonic: () => performance.now(),
        sleep,
      });
      const opts = { processTimeoutMs: 10_000, maxAttempts: 3, idlePollMs: 60_000, maxTracePoints: 1_000_000, maxOutageBackoffMs: 1000, ownerId: 'defender-0' };
      const published = new Map<string, number[]>();
      const publishRun = async (ch: { toolId: string; chamberId: string }, k: number, samples: number) => {
        const values = new Float64Array(samples).map((_, i) => 50 + Math.sin(i + k));
        const runId = `${ch.chamberId}-r${k}`;
        await store.traces.write({ ...ch, runId, timing: { kind: 'regular', startSeconds: 1_800_000_000 + k * 60, frequencyHz: 1 }, svids: new Map([[SVIDS[0]!, values]]), steps: [] });
        const start = new Date(Date.UTC(2026, 10, 25, 0, k)).toISOString();
        const body = { schema: 1, ...ch, runId, recipe: 'R', contextWindow: { start, end: start }, svids: SVIDS, trace: { store: 'default', samples }, completedAt: start };
        const seq = (await jetstream(nc).publish(notificationSubject(ch.toolId, ch.chamberId), JSON.stringify(body))).seq;
        published.set(ch.chamberId, [...(published.get(ch.chamberId) ?? []), seq]);
      };
      // Everything is in the stream before the workers start: all six chambers have runs waiting.
      for (let k = 0; k < 4; k++) for (const ch of chambers) await publishRun(ch, k, SAMPLES);
      await publishRun(chambers[0]!, 4, SAMPLES * 5); // larger than the whole budget
      for (const ch of chambers) {
        const w = new ChamberWorker(ch, 1, deps(), opts);
        workers.push(w);
        w.start(() => undefined);
      }
      await waitFor('every run applied', async () => workers.every((w) => w.mark === published.get(w.chamber.chamberId)!.at(-1)), 30_000);

      for (const ch of chambers) {
        const runs = await store.uchart.history(ch, { limit: 100 });
        expect(runs.map((r) => r.sequence)).toEqual(published.get(ch.chamberId));
        expect(runs.every((r) => r.points.length > 0)).toBe(true);
      }
      expect(peakHeld).toBe(2); // six chambers ready at once, room for two traces
      expect(peakBytes).toBeLessThanOrEqual(budget.capacity);
      expect(held).toBe(0);
      expect(budget.inUse).toBe(0);
      cache.close();
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
      await store.close();
      await nc.close();
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * Guarantee 4 (a store outage pauses processing; nothing is acked early, nothing lost) against the
 * attempt timeout, found by the chaos suite's store outage: an outage longer than
 * PROCESS_MAX_ATTEMPTS x PROCESS_TIMEOUT_SECONDS used up a run's attempts (the outage time counted
 * against each attempt's timeout), and a timed-out attempt kept retrying its commit beside the next
 * attempt: one committed late, the other then saw the run "already applied at an earlier sequence"
 * and dead-lettered it, or dead-lettered it as processing-failed while the first committed it.
 */
describeWithInfra(['nats'], 'ChamberWorker under a store outage longer than its attempts, against real NATS and SQLite', () => {
  it('pauses the run for the whole outage, then applies it exactly once, with no dead letter', async () => {
    await withChamber('worker-outage-', async ({ nc, store, reader, cache }) => {
      // The real store; while `down`, every commit fails as unavailable after 100 ms (a busy timeout).
      let down = false;
      let failedCommits = 0;
      let commitsInFlight = 0;
      const flaky = withCommitRun(store, async () => {
        if (down) {
          commitsInFlight++;
          try {
            await new Promise((r) => setTimeout(r, 100));
          } finally {
            commitsInFlight--;
          }
          failedCommits++;
          throw new StoreUnavailableError('database is locked (test outage)');
        }
      });
      const deadLetters: string[] = [];
      // 2 attempts of 10 s; each failed commit stands for 5 s of outage on the worker's clock (its
      // backoff waits that much out). The outage lasts until it has outlasted both attempts twice
      // over on that clock, however fast or slow the machine runs the retries.
      const clock = steppedClock();
      const OUTAGE_PER_FAILURE_MS = 5_000;
      const deps: WorkerDeps = {
        ...workerDeps({ nc, reader, cache, store: flaky, deadLetters, now: () => new Date() }),
        monotonic: clock.monotonic,
        sleep: clock.sleep,
        // Reported once the failure counts as paused, before the backoff: the outage goes on meanwhile.
        observer: { paused: (_c, what) => void (what === 'commit' && clock.advance(OUTAGE_PER_FAILURE_MS)) },
      };
      const opts = { ownerId: 'defender-0', processTimeoutMs: 10_000, maxAttempts: 2, idlePollMs: 60_000, maxTracePoints: 1_000_000, maxOutageBackoffMs: 200 };
      const worker = new ChamberWorker(chamber, 1, deps, opts);
      const publishRun = (k: number) => publishRunOf(nc, store, k);
      let exit: string | undefined;
      let exitErr: unknown;
      const feed = await watchNotifications(nc, (_s, seq) => worker.notify(seq));
      worker.start((r, err) => {
        exit = r;
        exitErr = err;
      });
      const seqs = [await publishRun(0)];
      await waitFor('run 0 applied', async () => worker.mark === seqs[0], 20_000);

      down = true;
      seqs.push(await publishRun(1));
      const outageFailures = Math.ceil((2 * opts.maxAttempts * opts.processTimeoutMs) / OUTAGE_PER_FAILURE_MS) + 1;
      await waitFor('the outage to outlast the attempts twice over', async () => failedCommits >= outageFailures || exit !== undefined, 30_000);
      expect({ mark: worker.mark, exit, deadLetters }).toEqual({ mark: seqs[0], exit: undefined, deadLetters: [] });
      down = false;
      seqs.push(await publishRun(2));
      await waitFor('runs 1 and 2 applied', async () => worker.mark === seqs[2] || exit !== undefined, 20_000);
      expect(exit).toBeUndefined();
      // Nothing may still run in the background and commit later: once the worker has stopped, no
      // commit is in flight and no retry waits to make one.
      await worker.stop();
      await waitFor('the worker quiescent', async () => commitsInFlight === 0 && clock.sleeping === 0, 20_000);

      expect({ exit, err: exitErr === undefined ? undefined : String(exitErr), deadLetters }).toEqual({ exit: 'stopped', err: undefined, deadLetters: [] });
      const runs = await store.uchart.history(chamber, { limit: 100 });
      expect(runs.map((r) => [r.sequence, r.runId])).toEqual(seqs.map((s, k) => [s, `r${k}`]));
      expect((await store.chamberState.get(chamber))?.highWaterMark).toBe(seqs[2]);
      const dl = await (await jetstreamManager(nc)).streams.info(STREAMS.deadLetters);
      expect(dl.state.messages).toBe(0);
      await feed.stop();
    });
  }, 60_000);
});

/**
 * An evaluation longer than the attempt timeout (a Phase I fit of thousands of indicators on a
 * saturated machine): the evaluation is bounded CPU work, so it does not count against the attempt's
 * timeout; before, the attempt was abandoned at its next write, the fit done again on every attempt
 * and the run dead-lettered as processing-failed.
 */
describeWithInfra(['nats'], 'ChamberWorker with an evaluation longer than its attempt timeout, against real NATS and SQLite', () => {
  it('commits the run that fits the limits on its first attempt, every run evaluated once, with no dead letter', async () => {
    await withChamber('worker-slow-eval-', async ({ nc, store, reader, cache }) => {
      // Limits from 2 runs of two indicators: a run early on fits them and writes two limit sets, so
      // its attempt has steps after its evaluation (where an abandoned attempt stops).
      const document = { schemaVersion: 1, name: 'slow-fit', indicators: ['mean', 'std'].map((statistic) => ({ id: statistic, svid: '*', statistic, baseline: { minRuns: 2 } })) };
      await store.strategies.put({ scope: strategyScope({ kind: 'chamber', chamber }), version: 1, document, createdAt: new Date(), author: 'test' });
      const deadLetters: string[] = [];
      const inner = createRunEvaluator();
      const evaluated: string[] = [];
      const clock = steppedClock();
      const PROCESS_TIMEOUT_MS = 10_000;
      const slow: RunEvaluator = Object.assign(Object.create(inner) as RunEvaluator, {
        evaluate: (input: EvaluationInput) => {
          const out = inner.evaluate(input);
          if (needsMoreHistory(out)) return out;
          evaluated.push(`${input.notification.runId}${out.newLimitSets.length > 0 ? ' (fit)' : ''}`);
          // The fit takes twice the attempt timeout on the worker's clock, within the synchronous
          // evaluation (the event loop does not turn meanwhile, as during a real fit).
          if (out.newLimitSets.length > 0) clock.advance(2 * PROCESS_TIMEOUT_MS);
          return out;
        },
      });
      // Each limit-set write takes a turn of the event loop, as one through the store's thread or a
      // network does (this file's store answers synchronously).
      const uchart = new Proxy(store.uchart, {
        get: (target, name, receiver) => {
          if (name === 'putLimitSet')
            return async (ls: Parameters<typeof store.uchart.putLimitSet>[0]) => {
              await new Promise((r) => setImmediate(r));
              return target.putLimitSet(ls);
            };
          const v = Reflect.get(target, name, receiver) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      const io = Object.create(store, { uchart: { value: uchart } }) as SqliteStore;
      const deps = { ...workerDeps({ nc, reader, cache, store: io, deadLetters, now: () => new Date() }), evaluator: slow, monotonic: clock.monotonic, sleep: clock.sleep };
      const worker = new ChamberWorker(chamber, 1, deps, { ownerId: 'defender-0', processTimeoutMs: PROCESS_TIMEOUT_MS, maxAttempts: 2, idlePollMs: 60_000, maxTracePoints: 1_000_000, maxOutageBackoffMs: 200 });
      let exit: string | undefined;
      const feed = await watchNotifications(nc, (_s, seq) => worker.notify(seq));
      worker.start((r) => (exit = r));
      try {
        const seqs: number[] = [];
        for (let k = 0; k < 4; k++) seqs.push(await publishRunOf(nc, store, k));
        await waitFor('run 3 applied or one dead-lettered', async () => worker.mark === seqs[3] || deadLetters.length > 0 || exit !== undefined, 60_000);

        // Every run evaluated once (an abandoned attempt would evaluate its run again), one of them fitting the limits.
        expect({ mark: worker.mark, deadLetters, exit }).toEqual({ mark: seqs[3], deadLetters: [], exit: undefined });
        expect(evaluated.map((e) => e.replace(' (fit)', ''))).toEqual(['r0', 'r1', 'r2', 'r3']);
        expect(evaluated.filter((e) => e.endsWith('(fit)'))).toHaveLength(1);
        expect((await store.uchart.history(chamber, { limit: 10 })).map((r) => r.runId)).toEqual(['r0', 'r1', 'r2', 'r3']);
        expect((await store.uchart.currentLimitSets(chamber)).length).toBe(2 * SVIDS.length);
      } finally {
        await worker.stop();
        await feed.stop();
      }
    });
  }, 90_000);
});

/**
 * Runs r0, r1, r2 and r1 again (a duplicate run id, skipped; its trace is read beside the check) through
 * a worker with `releaseTrace`; returns what the evaluator saw, the dead letters, the chamber's
 * stored history (run id, whether it has points) and the stream sequences.
 */
async function runWithRelease(
  releaseTrace: WorkerDeps['releaseTrace'],
  observer: WorkerDeps['observer'],
  settled: () => boolean,
): Promise<{ evaluated: { runId: string; samples: number }[]; deadLetters: string[]; runs: [string, boolean][]; seqs: number[] }> {
  let out: Awaited<ReturnType<typeof runWithRelease>> | undefined;
  await withChamber('worker-release-', async ({ nc, store, reader, cache }) => {
    const base = createRunEvaluator();
    const evaluated: { runId: string; samples: number }[] = [];
    const evaluator = around(base, (input) => {
      evaluated.push({ runId: input.notification.runId, samples: input.trace.svids.get(SVIDS[0]!)?.length ?? -1 });
      return base.evaluate(input);
    });
    const deadLetters: string[] = [];
    const deps: WorkerDeps = {
      source: reader,
      sink: {
        publish: async (s, p, id) => {
          if (s.startsWith('dc.dead.')) deadLetters.push(s);
          await publishOnce(nc, s, p, id);
        },
      },
      store,
      evaluator,
      cache,
      semaphore: new Semaphore(4),
      releaseTrace,
      observer,
      now: () => new Date(),
      monotonic: () => performance.now(),
      sleep,
    };
    const worker = new ChamberWorker(chamber, 1, deps, { ownerId: 'defender-0', processTimeoutMs: 10_000, maxAttempts: 3, idlePollMs: 60_000, maxTracePoints: 1_000_000, maxOutageBackoffMs: 1000 });
    const feed = await watchNotifications(nc, (_s, seq) => worker.notify(seq));
    worker.start(() => undefined);
    try {
      const seqs: number[] = [];
      for (const k of [0, 1, 2, 1]) seqs.push(await publishRunOf(nc, store, k));
      await waitFor('all four handled', async () => worker.mark === seqs[3], 20_000);
      await waitFor('releases settled', async () => settled(), 20_000);
      const runs = (await store.uchart.history(chamber, { limit: 100 })).map((r): [string, boolean] => [r.runId, r.points.length > 0]);
      out = { evaluated, deadLetters, runs, seqs };
    } finally {
      await worker.stop();
      await feed.stop();
    }
  });
  if (!out) throw new Error('no result');
  return out;
}

/**
 * A trace's memory goes back as soon as the run is done with it (WorkerDeps.releaseTrace): after
 * the evaluation, which saw the whole trace, and also when an attempt stops before evaluating (here
 * a duplicate run id, skipped after its trace was read). A release that fails changes nothing.
 */
describeWithInfra(['nats'], 'ChamberWorker giving trace memory back, against real NATS and SQLite', () => {
  it('releases every trace it read once, after evaluating it or when the run is skipped first', async () => {
    const released: { runId: string; bytes: number }[] = [];
    const r = await runWithRelease(
      (trace) => void released.push({ runId: trace.runId, bytes: releaseTraceMemory(trace) }),
      undefined,
      () => released.filter((x) => x.bytes > 0).length >= 4,
    );
    // The evaluator saw every sample; each trace read (60 f64 samples) was given back exactly once.
    expect(r.evaluated).toEqual(['r0', 'r1', 'r2'].map((runId) => ({ runId, samples: 60 })));
    expect(released.filter((x) => x.bytes > 0)).toEqual(['r0', 'r1', 'r2', 'r1'].map((runId) => ({ runId, bytes: 480 })));
    // The duplicate run id is skipped, not dead-lettered: nothing of it is stored.
    expect(r.deadLetters).toEqual([]);
    expect(r.runs).toEqual([
      ['r0', true],
      ['r1', true],
      ['r2', true],
    ]);
  }, 60_000);

  it('a release that throws is reported, and every run is handled as without it', async () => {
    const failures: string[] = [];
    const r = await runWithRelease(
      () => {
        throw new Error('cannot detach');
      },
      { releaseFailed: (key, err) => failures.push(`${key}: ${(err as Error).message}`) },
      // Each evaluated trace twice (after evaluating, then at the attempt's end), the duplicate's once.
      () => failures.length >= 7,
    );
    expect(r.evaluated.map((e) => e.runId)).toEqual(['r0', 'r1', 'r2']);
    expect(r.deadLetters).toEqual([]);
    expect(r.runs.map(([id]) => id)).toEqual(['r0', 'r1', 'r2']);
    expect(new Set(failures)).toEqual(new Set([`${chamber.toolId}:${chamber.chamberId}: cannot detach`]));
  }, 60_000);
});

/**
 * A run whose attempt wrote the limit sets it froze and then failed (found by the pipeline bench: a
 * Phase I run timed out on Cassandra after writing the first part of its model) is retried; the retry
 * creates the same records — stamped with the run's completion time, not the clock — so the store
 * takes them as unchanged instead of a version conflict that dead-lettered the run.
 */
describeWithInfra(['nats'], 'ChamberWorker retrying a run that already wrote its limit sets, against real NATS and SQLite', () => {
  it('applies the run on the retry, with the limit sets of the first attempt, and no dead letter', async () => {
    await withChamber('worker-retry-', async ({ nc, store, reader, cache }) => {
      // Phase I of 3 runs: the run after them freezes the limits.
      const doc = { schemaVersion: 1, name: 'short', indicators: [{ id: 'm', svid: '*', statistic: 'mean', rules: ['WE1'], baseline: { minRuns: 3, exclusion: false } }] };
      await store.strategies.put({ scope: strategyScope({ kind: 'chamber', chamber }), version: 1, document: doc, createdAt: new Date(0), author: 'test' });
      let failNextCommit = false;
      let clock = Date.UTC(2026, 10, 27);
      const flaky = withCommitRun(store, () => {
        if (failNextCommit) {
          failNextCommit = false;
          throw new Error('commit failed once (test)');
        }
      });
      const deadLetters: string[] = [];
      // Every reading of the clock is later than the one before: a retry never sees the same time.
      const deps = workerDeps({ nc, reader, cache, store: flaky, deadLetters, now: () => new Date((clock += 1000)) });
      const worker = new ChamberWorker(chamber, 1, deps, { ownerId: 'defender-0', processTimeoutMs: 5_000, maxAttempts: 3, idlePollMs: 60_000, maxTracePoints: 1_000_000, maxOutageBackoffMs: 200 });
      const feed = await watchNotifications(nc, (_s, seq) => worker.notify(seq));
      worker.start(() => undefined);
      for (let k = 0; k < 2; k++) await publishRunOf(nc, store, k);
      const phaseOne = await publishRunOf(nc, store, 2);
      await waitFor('Phase I applied', async () => worker.mark === phaseOne, 20_000);
      expect(await store.uchart.currentLimitSets(chamber)).toEqual([]);
      failNextCommit = true;
      const freezing = await publishRunOf(nc, store, 3);
      await waitFor('run 3 applied', async () => worker.mark === freezing || deadLetters.length > 0, 20_000);

      expect(deadLetters).toEqual([]);
      expect(worker.mark).toBe(freezing);
      const limits = await store.uchart.currentLimitSets(chamber);
      expect(limits.map((l) => [l.indicatorKey, l.version])).toEqual([['R|m/pressure', 1]]);
      // Stamped with run 3's completion time (its notification's completedAt).
      expect(limits[0]?.createdAt.toISOString()).toBe(new Date(Date.UTC(2026, 10, 25, 0, 3)).toISOString());
      await worker.stop();
      await feed.stop();
    });
  }, 60_000);
});

/**
 * The strategy lookup order (contracts `strategyScopesForRun`) with real NATS and SQLite: each run
 * is judged by the newest version in the most specific scope that holds one (each scope's strategy
 * has its own indicator, so the committed points say which one judged the run); an invalid winner,
 * or one whose own scope names another chamber or recipe, dead-letters the run (`invalid-strategy`)
 * instead of falling through to a less specific scope.
 */
describeWithInfra(['nats'], 'ChamberWorker strategy lookup order, against real NATS and SQLite', () => {
  it('chamber+recipe, chamber, the legacy key, recipe, default; an invalid or mismatched winner never falls through', async () => {
    await withChamber('worker-strategy-', async ({ nc, store, reader, cache }) => {
      const deadLetters: string[] = [];
      const reasons: string[] = [];
      const deps: WorkerDeps = {
        ...workerDeps({ nc, reader, cache, store, deadLetters, now: () => new Date() }),
        observer: {
          deadLettered: (_key, _seq, reason, detail) => reasons.push(`${reason}: ${detail}`),
          strategyFound: (_key, scope) => {
            if (kinds.at(-1) !== strategyScopeKind(scope)) kinds.push(strategyScopeKind(scope));
          },
        },
      };
      const kinds: string[] = []; // the scope kinds that judged the runs, in turn (repeats folded)
      const worker = new ChamberWorker(chamber, 1, deps, { ownerId: 'defender-0', processTimeoutMs: 10_000, maxAttempts: 2, idlePollMs: 60_000, maxTracePoints: 1_000_000, maxOutageBackoffMs: 200 });
      const feed = await watchNotifications(nc, (_s, seq) => worker.notify(seq));
      worker.start(() => undefined);
      const doc = (id: string, scope: JsonObject = {}): JsonObject => ({ schemaVersion: 1, name: id, scope, indicators: [{ id, svid: '*', statistic: 'mean' }] });
      const versions = new Map<string, number>();
      const put = async (scope: string, document: JsonObject) => {
        const version = (versions.get(scope) ?? 0) + 1;
        versions.set(scope, version);
        await store.strategies.put({ scope, version, document, createdAt: new Date(), author: 'test' });
      };
      let k = 0;
      /** Publishes the next run and returns the indicators it was judged by, or its dead letter. */
      const judgedBy = async (): Promise<string> => {
        const before = reasons.length;
        const seq = await publishRunOf(nc, store, k++);
        await waitFor(`run ${k - 1} done`, async () => worker.mark >= seq, 20_000);
        if (reasons.length > before) return reasons.slice(before).join(' | ');
        const [run] = await store.uchart.history(chamber, { limit: 1 });
        return [...new Set(run?.points.map((p) => p.indicatorKey.split('/')[0]))].join(',');
      };

      // Nothing stored: the built-in default (the chamber monitor).
      expect(await judgedBy()).toMatch(/^R\|m/);
      await put(strategyScope({ kind: 'default' }), doc('d'));
      expect(await judgedBy()).toBe('R|d');
      await put(strategyScope({ kind: 'recipe', recipe: 'OTHER' }), doc('other'));
      expect(await judgedBy()).toBe('R|d');
      await put(strategyScope({ kind: 'recipe', recipe: 'R' }), doc('rcp'));
      expect(await judgedBy()).toBe('R|rcp');
      // The legacy key <tool>:<chamber>, as data written before the documented scopes: still read.
      await put(`${chamber.toolId}:${chamber.chamberId}`, doc('legacy'));
      expect(await judgedBy()).toBe('R|legacy');
      await put(strategyScope({ kind: 'chamber', chamber }), doc('ch'));
      expect(await judgedBy()).toBe('R|ch');
      await put(strategyScope({ kind: 'chamber', chamber, recipe: 'R' }), doc('chr'));
      expect(await judgedBy()).toBe('R|chr');
      // The newest version of the winning scope.
      await put(strategyScope({ kind: 'chamber', chamber, recipe: 'R' }), doc('chr2'));
      expect(await judgedBy()).toBe('R|chr2');

      // An invalid newest version of the winner: dead-lettered, never judged by chamber/... or default.
      await put(strategyScope({ kind: 'chamber', chamber, recipe: 'R' }), { schemaVersion: 1, name: 'broken', indicators: [{ id: 'bad id!', svid: '*', statistic: 'mean' }] });
      expect(await judgedBy()).toMatch(/^invalid-strategy: stored defense strategy is invalid: indicators\.0\.id: /);
      // A winner whose document names another chamber: dead-lettered, naming both.
      await put(strategyScope({ kind: 'chamber', chamber, recipe: 'R' }), doc('elsewhere', { chamber: 'CVD09:PM1' }));
      expect(await judgedBy()).toBe(
        'invalid-strategy: stored defense strategy is invalid: scope.chamber: names chamber CVD09:PM1 but it is stored under scope "chamber/t1:c1/recipe/R", for chamber t1:c1',
      );
      // ... or another recipe.
      await put(strategyScope({ kind: 'chamber', chamber, recipe: 'R' }), doc('r2', { recipe: 'R2' }));
      expect(await judgedBy()).toMatch(/^invalid-strategy: .*scope\.recipe: names recipe R2 but it is stored under scope "chamber\/t1:c1\/recipe\/R", for recipe R$/);
      // Fixed: judged again, the chamber going on after its dead letters.
      await put(strategyScope({ kind: 'chamber', chamber, recipe: 'R' }), doc('fixed', { chamber: 't1:c1', recipe: 'R' }));
      expect(await judgedBy()).toBe('R|fixed');
      expect(deadLetters.map((d) => d.split(':')[0])).toEqual(['dc.dead.invalid-strategy', 'dc.dead.invalid-strategy', 'dc.dead.invalid-strategy']);
      // What the defender counts (defender_strategy_lookups_total) and warns about (the legacy key).
      expect(kinds).toEqual(['builtin', 'default', 'recipe', 'legacy_key', 'chamber', 'chamber_recipe']);
      await worker.stop();
      await feed.stop();
    });
  }, 120_000);
});

/** The real evaluator, plus one run-level alarm on every run whose id is in `alarmed`. */
function alarmingEvaluator(alarmed: ReadonlySet<string>): RunEvaluator {
  const base = createRunEvaluator();
  return around(base, (input) => {
    const r = base.evaluate(input);
    const runId = input.notification.runId;
    if (needsMoreHistory(r) || !alarmed.has(runId)) return r;
    return { ...r, alarms: [...r.alarms, { ruleId: 'test-rule', indicatorKey: '*', action: 'ALARM', value: null, message: `alarm of ${runId}` }] };
  });
}

/**
 * `base` with its `evaluate` seen through `evaluate`, which returns what base's gives for the input
 * (maybe with more in it): so it keeps `RunEvaluator.evaluate`'s contract (more history asked for only
 * with a `historyLimit`), which its overloads state and a plain function cannot.
 */
function around(base: RunEvaluator, evaluate: (input: EvaluationInput) => RunEvaluation | MoreHistoryNeeded): RunEvaluator {
  return {
    historyRuns: (s, sc) => base.historyRuns(s, sc),
    fullHistoryRuns: (s, sc) => base.fullHistoryRuns(s, sc),
    evaluate: evaluate as RunEvaluator['evaluate'],
    stateAfterEvent: (input) => base.stateAfterEvent(input),
  };
}

/** Message ids of the alarms stored in the events stream for {@link chamber}, in stream order. */
async function alarmsInStream(nc: NatsConnection): Promise<string[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(STREAMS.defenseEvents);
  const ids: string[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(STREAMS.defenseEvents, { seq }).catch(() => null);
    if (m?.subject === `defense.alarms.${chamber.toolId}.${chamber.chamberId}`) ids.push(m.header.get('Nats-Msg-Id'));
  }
  return ids;
}

const alarmId = (runId: string): string => `alarm:${chamber.toolId}:${chamber.chamberId}:${runId}:test-rule:*`;

/**
 * A sink as the defender wires it (JetStream, newest id per subject), recording the ids it
 * published. An id matching `failing` fails as a NATS outage: `before` it is stored (NATS refused
 * it), `after` it is stored and the acknowledgement is lost (as when the process dies right then).
 */
function recordingSink(nc: NatsConnection, failing: (msgId: string) => 'before' | 'after' | undefined = () => undefined): Required<WorkerDeps['sink']> & { ids: string[] } {
  const ids: string[] = [];
  const outage = () => Object.assign(new Error('NATS unavailable (test)'), { retryable: true });
  return {
    ids,
    publish: async (subject, payload, msgId) => {
      const fails = failing(msgId);
      if (fails === 'before') throw outage();
      await publishOnce(nc, subject, payload, msgId);
      if (!subject.startsWith('dc.dead.')) ids.push(msgId);
      if (fails === 'after') throw outage();
    },
    lastMsgId: (subject) => lastMessageId(nc, STREAMS.defenseEvents, subject),
  };
}

/**
 * Waits until JetStream's duplicate window is over for everything published so far: a probe id
 * published now is accepted again only once the window has passed since (no timing assumed).
 */
async function outlastDuplicateWindow(nc: NatsConnection): Promise<void> {
  const probe = `window-probe-${Date.now()}`;
  expect(await publishOnce(nc, 'defense.alarms.probe.window', '{}', probe)).toBe(true);
  await waitFor('the duplicate window to pass', async () => publishOnce(nc, 'defense.alarms.probe.window', '{}', probe), 60_000, 250);
}

const workerOpts = { processTimeoutMs: 10_000, maxAttempts: 3, idlePollMs: 60_000, maxTracePoints: 1_000_000, maxOutageBackoffMs: 200 };

/** Starts the worker of owner `defender-<epoch - 1>` of {@link chamber} at `epoch`. */
function startOwner(deps: WorkerDeps, epoch: number): ChamberWorker {
  const w = new ChamberWorker(chamber, epoch, deps, { ...workerOpts, ownerId: `defender-${epoch - 1}` });
  w.start(() => undefined);
  return w;
}

/** Publishes run `r<k>` and tells `worker` about it; returns its stream sequence. */
async function runFor(worker: ChamberWorker, nc: NatsConnection, store: SqliteStore, k: number): Promise<number> {
  const seq = await publishRunOf(nc, store, k);
  worker.notify(seq);
  return seq;
}

/**
 * Guarantee 10 (exactly once past every window) with real NATS and SQLite: the store skips a run id
 * the chamber applied before, whatever the stream sequence or age of its notification, and alarms go
 * out through the chamber's outbox, so a claim publishes only what was never marked published.
 */
describeWithInfra(['nats'], 'ChamberWorker exactly once past the duplicate window, against real NATS and SQLite', () => {
  it('skips a notification whose run id was applied at an earlier sequence: no second run, no second alarm, no dead letter', async () => {
    await withChamber('worker-dup-', async ({ nc, store, reader, cache }) => {
      const sink = recordingSink(nc);
      const outcomes = new Map<number, string>();
      const deps: WorkerDeps = {
        ...workerDeps({ nc, reader, cache, store, deadLetters: [], now: () => new Date() }),
        sink,
        evaluator: alarmingEvaluator(new Set(['r0'])),
        observer: { processed: (_c, seq, _ms, outcome) => void outcomes.set(seq, outcome) },
      };
      const worker = new ChamberWorker(chamber, 1, deps, { ...workerOpts, ownerId: 'defender-0' });
      const feed = await watchNotifications(nc, (_s, seq) => worker.notify(seq));
      worker.start(() => undefined);
      try {
        const seqs = [await publishRunOf(nc, store, 0), await publishRunOf(nc, store, 1), await publishRunOf(nc, store, 0)];
        await waitFor('all three handled', async () => worker.mark === seqs[2], 20_000);
        expect((await store.uchart.history(chamber, { limit: 10 })).map((r) => [r.sequence, r.runId])).toEqual([
          [seqs[0], 'r0'],
          [seqs[1], 'r1'],
        ]);
        expect(outcomes.get(seqs[2]!)).toBe('duplicate-run');
        expect(sink.ids).toEqual([alarmId('r0')]);
        expect(await alarmsInStream(nc)).toEqual([alarmId('r0')]);
        expect((await (await jetstreamManager(nc)).streams.info(STREAMS.deadLetters)).state.messages).toBe(0);
      } finally {
        await worker.stop();
        await feed.stop();
      }
    });
  }, 60_000);

  it('a claim after a crash between commit and publish publishes the unpublished alarm once; a claim after that publishes nothing', async () => {
    await withChamber('worker-outbox-', async ({ nc, store, reader, cache }) => {
      const base = workerDeps({ nc, reader, cache, store, deadLetters: [], now: () => new Date() });
      const evaluator = alarmingEvaluator(new Set(['r0']));
      // Owner A commits r0 but never gets its alarm out (NATS refuses it), then dies.
      const sinkA = recordingSink(nc, () => 'before');
      const a = startOwner({ ...base, sink: sinkA, evaluator }, 1);
      const r0 = await runFor(a, nc, store, 0);
      await waitFor('A committed r0', async () => (await store.chamberState.get(chamber))?.highWaterMark === r0, 20_000);
      expect(await store.outbox.pending(chamber, { limit: 10 })).toMatchObject([{ sequence: r0, msgId: alarmId('r0') }]);
      await a.stop();
      expect(await alarmsInStream(nc)).toEqual([]);

      // Owner B claims: it publishes the alarm from the outbox (the payload A's commit stored) and marks it.
      const sinkB = recordingSink(nc);
      const b = startOwner({ ...base, sink: sinkB, evaluator }, 2);
      await waitFor('B published the outbox', async () => (await store.outbox.publishedThrough(chamber)) === r0, 20_000);
      await b.stop();
      expect(sinkB.ids).toEqual([alarmId('r0')]);
      const stored = await (await jetstreamManager(nc)).streams.getMessage(STREAMS.defenseEvents, { last_by_subj: `defense.alarms.${chamber.toolId}.${chamber.chamberId}` });
      expect(JSON.parse(stored?.string() ?? 'null')).toMatchObject({ runId: 'r0', sequence: r0, epoch: 1, ownerId: 'defender-0' });

      // Owner C claims after everything was published: nothing goes out again, and it carries on.
      const sinkC = recordingSink(nc);
      const c = startOwner({ ...base, sink: sinkC, evaluator }, 3);
      const r1 = await runFor(c, nc, store, 1);
      await waitFor('C applied r1', async () => c.mark === r1, 20_000);
      await c.stop();
      expect(sinkC.ids).toEqual([]);
      expect(await alarmsInStream(nc)).toEqual([alarmId('r0')]);
    });
  }, 60_000);

  it('an outage longer than the (shortened) duplicate window neither doubles an alarm nor applies a run twice', async () => {
    await withChamber(
      'worker-window-',
      async ({ nc, store, reader, cache }) => {
        const base = workerDeps({ nc, reader, cache, store, deadLetters: [], now: () => new Date() });
        const evaluator = alarmingEvaluator(new Set(['r0', 'r1']));
        // Owner A: r0 applied and its alarm published; r1 committed, its alarm refused by NATS; then A dies.
        const sinkA = recordingSink(nc, (id) => (id === alarmId('r1') ? 'before' : undefined));
        const a = startOwner({ ...base, sink: sinkA, evaluator }, 1);
        const r0 = await runFor(a, nc, store, 0);
        await waitFor('A published r0', async () => (await store.outbox.publishedThrough(chamber)) === r0, 20_000);
        const r1 = await runFor(a, nc, store, 1);
        await waitFor('A committed r1', async () => (await store.chamberState.get(chamber))?.highWaterMark === r1, 20_000);
        await a.stop();

        // The outage outlasts the duplicate window; meanwhile r0's notification is published again.
        await outlastDuplicateWindow(nc);
        const replay = await publishRunOf(nc, store, 0);

        const sinkB = recordingSink(nc);
        const outcomes = new Map<number, string>();
        const b = startOwner({ ...base, sink: sinkB, evaluator, observer: { processed: (_c, seq, _ms, outcome) => void outcomes.set(seq, outcome) } }, 2);
        b.notify(replay);
        await waitFor('B handled the replay', async () => b.mark === replay, 20_000);
        await b.stop();

        expect(outcomes.get(replay)).toBe('duplicate-run');
        expect(sinkB.ids).toEqual([alarmId('r1')]);
        expect(await alarmsInStream(nc)).toEqual([alarmId('r0'), alarmId('r1')]);
        expect((await store.uchart.history(chamber, { limit: 10 })).map((r) => [r.sequence, r.runId])).toEqual([
          [r0, 'r0'],
          [r1, 'r1'],
        ]);
        expect(await store.outbox.pending(chamber, { limit: 10 })).toEqual([]);
        expect((await (await jetstreamManager(nc)).streams.info(STREAMS.deadLetters)).state.messages).toBe(0);

        // Another outage past the window, another owner: nothing is published again.
        await outlastDuplicateWindow(nc);
        const sinkC = recordingSink(nc);
        const c = startOwner({ ...base, sink: sinkC, evaluator }, 3);
        const r2 = await runFor(c, nc, store, 2);
        await waitFor('C applied r2', async () => c.mark === r2, 20_000);
        await c.stop();
        expect(sinkC.ids).toEqual([]);
        expect(await alarmsInStream(nc)).toEqual([alarmId('r0'), alarmId('r1')]);
      },
      { ...DEFAULT_STREAM_SETTINGS, duplicateWindowSeconds: 1 },
    );
  }, 90_000);

  it('an owner that dies between the acknowledgement and the mark: past the window, the next owner does not publish it again', async () => {
    await withChamber(
      'worker-ackmark-',
      async ({ nc, store, reader, cache }) => {
        const base = workerDeps({ nc, reader, cache, store, deadLetters: [], now: () => new Date() });
        const evaluator = alarmingEvaluator(new Set(['r0', 'r1']));
        // A: r0's alarm is stored by the stream but its acknowledgement never arrives (A dies before marking).
        const sinkA = recordingSink(nc, (id) => (id === alarmId('r0') ? 'after' : undefined));
        const a = startOwner({ ...base, sink: sinkA, evaluator }, 1);
        await runFor(a, nc, store, 0);
        await waitFor('r0 stored in the stream', async () => (await alarmsInStream(nc)).length === 1, 20_000);
        await a.stop();
        expect(await store.outbox.publishedThrough(chamber)).toBe(0);

        await outlastDuplicateWindow(nc);
        const sinkB = recordingSink(nc);
        const b = startOwner({ ...base, sink: sinkB, evaluator }, 2);
        const r1 = await runFor(b, nc, store, 1);
        await waitFor('B applied r1', async () => b.mark === r1 && (await store.outbox.publishedThrough(chamber)) === r1, 20_000);
        await b.stop();

        expect(sinkB.ids).toEqual([alarmId('r1')]);
        expect(await alarmsInStream(nc)).toEqual([alarmId('r0'), alarmId('r1')]);
      },
      { ...DEFAULT_STREAM_SETTINGS, duplicateWindowSeconds: 1 },
    );
  }, 90_000);
  it('publishes a run\'s alarms as committed once it has seen the outbox empty, and reads the outbox again after a failed publish', async () => {
    await withChamber('worker-fastpath-', async ({ nc, store, reader, cache }) => {
      let pendingReads = 0;
      const counted = Object.create(store) as SqliteStore;
      Object.defineProperty(counted, 'outbox', {
        value: {
          pending: (...a: Parameters<typeof store.outbox.pending>) => (pendingReads++, store.outbox.pending(...a)),
          publishedThrough: (...a: Parameters<typeof store.outbox.publishedThrough>) => store.outbox.publishedThrough(...a),
          markPublished: (...a: Parameters<typeof store.outbox.markPublished>) => store.outbox.markPublished(...a),
        },
      });
      const base = workerDeps({ nc, reader, cache, store: counted, deadLetters: [], now: () => new Date() });
      // r2's alarm is refused by NATS once.
      let refusals = 0;
      const sink = recordingSink(nc, (id) => (id === alarmId('r2') && refusals++ === 0 ? 'before' : undefined));
      const published: string[] = [];
      const w = startOwner({ ...base, sink, evaluator: alarmingEvaluator(new Set(['r0', 'r1', 'r2', 'r3'])), observer: { published: (_c, e) => void published.push(`${e.sequence}:${e.index}:${e.msgId}`) } }, 1);
      try {
        // r0: a new chamber's first alarm goes through the outbox read (nothing told this owner it was empty).
        const r0 = await runFor(w, nc, store, 0);
        await waitFor('r0 published', async () => (await store.outbox.publishedThrough(chamber)) === r0, 20_000);
        const afterR0 = pendingReads;
        expect(afterR0).toBeGreaterThan(0);
        // r1: published as committed, without reading the outbox.
        const r1 = await runFor(w, nc, store, 1);
        await waitFor('r1 published', async () => (await store.outbox.publishedThrough(chamber)) === r1, 20_000);
        expect(pendingReads).toBe(afterR0);
        // r2: the publish fails once; the retry reads the outbox and publishes r2 once.
        const r2 = await runFor(w, nc, store, 2);
        await waitFor('r2 published', async () => (await store.outbox.publishedThrough(chamber)) === r2, 20_000);
        expect(pendingReads).toBeGreaterThan(afterR0);
        const afterR2 = pendingReads;
        // r3: the retry emptied the outbox again, so r3 goes out as committed.
        const r3 = await runFor(w, nc, store, 3);
        await waitFor('r3 published', async () => (await store.outbox.publishedThrough(chamber)) === r3, 20_000);
        expect(pendingReads).toBe(afterR2);

        expect(await alarmsInStream(nc)).toEqual(['r0', 'r1', 'r2', 'r3'].map(alarmId));
        expect(published).toEqual([
          [r0, 'r0'],
          [r1, 'r1'],
          [r2, 'r2'],
          [r3, 'r3'],
        ].map(([seq, id]) => `${seq}:0:${alarmId(String(id))}`));
        expect(await store.outbox.pending(chamber, { limit: 10 })).toEqual([]);
        // What went out is what the commits stored: the payloads in the stream are the outbox's.
        const last = await (await jetstreamManager(nc)).streams.getMessage(STREAMS.defenseEvents, { last_by_subj: `defense.alarms.${chamber.toolId}.${chamber.chamberId}` });
        expect(JSON.parse(last?.string() ?? 'null')).toMatchObject({ runId: 'r3', sequence: r3, epoch: 1, ownerId: 'defender-0' });
      } finally {
        await w.stop();
      }
    });
  }, 60_000);
});

/**
 * Guarantee 9 (a recreated stream is detected) and 10 with real NATS and SQLite: NATS restarts with
 * an empty store and a publisher recreates the stream, whose sequences restart at 1, below the
 * chamber's mark. Before ADR 0007 the worker read on from its mark and skipped every new run
 * silently; now it detects the new stream, re-bases the chamber (offset := mark) and reads the new
 * stream from its start: re-published runs are skipped by run id, new ones applied, each once.
 */
describeWithInfra(['nats'], 'ChamberWorker after NATS lost its store, against real NATS and SQLite', () => {
  it('a mark without a stream adopts it; after the stream is recreated empty, every new run is applied once and none twice', async () => {
    const nats = await startSecuredNatsServer();
    const dir = mkdtempSync(join(tmpdir(), 'worker-recreated-'));
    const nc = await connect({ ...nats.connectOptions(), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const store = await SqliteStore.open({ filename: join(dir, 'd.db') });
    const cache = new UChartHistoryCache({ source: store.uchart, sizeMb: 8 });
    const events: string[] = [];
    const outcomes: string[] = [];
    let worker: ChamberWorker | undefined;
    try {
      await ensureStreams(nc);
      await store.chamberMetadata.upsert({ ...chamber, svidCount: 1, collectionFreqHz: 1, contextDurationSeconds: 60, weight: 60, lastUpdated: new Date(), source: 'configured', observedRuns: 0 });
      const reader = await NotificationReader.open(nc);
      const firstStream = await reader.streamId();
      // r1 was applied by a release before migration 3: its mark carries no stream.
      const s1 = await publishRunOf(nc, store, 1);
      await store.chamberState.commitRun({ chamber, epoch: 1, ownerId: 'defender-0', sequence: s1, runId: 'r1', committedAt: new Date(), points: [] });

      const deps: WorkerDeps = {
        ...workerDeps({ nc, reader, cache, store, deadLetters: [], now: () => new Date() }),
        observer: {
          streamAdopted: (_c, i) => events.push(`adopted ${i.streamId === firstStream ? 'first' : i.streamId} at ${i.highWaterMark}`),
          streamMismatch: (_c, i) => events.push(`mismatch ${i.recorded === firstStream ? 'first' : i.recorded} at ${i.highWaterMark}`),
          streamRebased: (_c, i) => events.push(`rebased to ${i.to === firstStream ? 'first' : 'new'} at ${i.offset}`),
          processed: (_c, seq, _ms, outcome) => outcomes.push(`${seq} ${outcome}`),
        },
      };
      worker = new ChamberWorker(chamber, 2, deps, { ...workerOpts, idlePollMs: 200, ownerId: 'defender-1' });
      worker.start(() => undefined);
      for (const k of [2, 3, 4]) worker.notify(await publishRunOf(nc, store, k));
      await waitFor('r2-r4 applied', async () => worker?.mark === 4, 20_000);
      expect(events).toEqual(['adopted first at 1']);
      expect(worker.stream).toEqual({ streamId: firstStream, offset: 0, status: 'bound' });

      // NATS loses its store; a publisher recreates the stream and publishes r3 again (its retry):
      // sequence 1, below the mark (4). The worker sees the stream's sequences restarted below its
      // mark and re-bases; then r4 (again) and the new runs r5-r7 arrive at 2-5. (A recreated stream
      // whose sequences already passed the mark before the worker looked is taken for the same
      // stream: ADR 0007, with marks in the thousands at any real fab.)
      await nats.server.restart({ emptyStore: true });
      await waitFor('the stream recreated', async () => ensureStreams(nc).then(() => true, () => false), 30_000, 200);
      const again: number[] = [await publishRunOf(nc, store, 3)];
      worker.notify(again[0]!);
      await waitFor('re-based', async () => events.includes('rebased to new at 4'), 30_000);
      for (const k of [4, 5, 6, 7]) again.push(await publishRunOf(nc, store, k));
      expect(again).toEqual([1, 2, 3, 4, 5]);
      for (const seq of again.slice(1)) worker.notify(seq);

      await waitFor('r5-r7 applied', async () => worker?.mark === 9, 30_000);
      expect(events).toEqual(['adopted first at 1', 'mismatch first at 4', 'rebased to new at 4']);
      expect(worker.stream).toMatchObject({ offset: 4, status: 'bound' });
      expect(worker.stream.streamId).not.toBe(firstStream);
      // Store sequences keep growing: the new stream's 1-5 are the store's 5-9.
      expect(outcomes).toEqual(['2 applied', '3 applied', '4 applied', '5 duplicate-run', '6 duplicate-run', '7 applied', '8 applied', '9 applied']);
      const runs = await store.uchart.history(chamber, { limit: 20 });
      expect(runs.map((r) => `${r.sequence}:${r.runId}`)).toEqual(['1:r1', '2:r2', '3:r3', '4:r4', '7:r5', '8:r6', '9:r7']);
      expect(await store.chamberState.get(chamber)).toMatchObject({ highWaterMark: 9, streamOffset: 4, streamId: worker.stream.streamId });
    } finally {
      await worker?.stop();
      cache.close();
      await store.close();
      await nc.close();
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

/**
 * The history a worker reads: the steady state's (10 runs for the default strategy, as many as the
 * defender's cache keeps), and, for the run that completes Phase I (30 runs), as many as it asks for
 * (MoreHistoryNeeded): read past the cache from the store, and the run judged again with them.
 */
describeWithInfra(['nats'], 'ChamberWorker reading more history when a run needs it, against real NATS and SQLite', () => {
  it('completes Phase I with the 30 runs read from the store, every other run with the cached 10', async () => {
    await withChamber('worker-history-', async ({ nc, store, reader }) => {
      const base = createRunEvaluator();
      const calls = new Map<string, number[]>();
      // Per read: the points only a baseline fit reads (the defender's cache leaves them out).
      const baselinePoints = new Map<string, number[]>();
      const evaluator = around(base, (input) => {
        const runId = input.notification.runId;
        calls.set(runId, [...(calls.get(runId) ?? []), input.history.length]);
        const n = input.history.reduce((sum, r) => sum + r.points.filter(isBaselineData).length, 0);
        baselinePoints.set(runId, [...(baselinePoints.get(runId) ?? []), n]);
        return base.evaluate(input);
      });
      // As the defender builds it (processing.service).
      const cache = new UChartHistoryCache({ source: store.uchart, sizeMb: 8, runsPerChamber: base.historyRuns(undefined), leaveOut: isBaselineData });
      const deadLetters: string[] = [];
      const worker = new ChamberWorker(chamber, 1, { ...workerDeps({ nc, reader, cache, store, deadLetters, now: () => new Date() }), evaluator }, {
        processTimeoutMs: 30_000,
        maxAttempts: 3,
        idlePollMs: 60_000,
        maxTracePoints: 1_000_000,
        maxOutageBackoffMs: 1000,
        ownerId: 'defender-0',
      });
      const feed = await watchNotifications(nc, (_s, seq) => worker.notify(seq));
      worker.start(() => undefined);
      const rand = seededRandom(5);
      let last = 0;
      for (let k = 0; k < 33; k++) {
        // A run offset shared by the whole trace, and per-sample noise: a baseline the monitor accepts.
        const offset = normalDeviate(rand);
        const values = new Float64Array(60).map(() => 50 + offset + 0.1 * normalDeviate(rand));
        await store.traces.write({ ...chamber, runId: `r${k}`, timing: { kind: 'regular', startSeconds: 1_800_000_000 + k * 60, frequencyHz: 1 }, svids: new Map([[SVIDS[0]!, values]]), steps: [] });
        const start = new Date(Date.UTC(2026, 10, 25, 0, k)).toISOString();
        const body = { schema: 1, ...chamber, runId: `r${k}`, recipe: 'R', contextWindow: { start, end: start }, svids: SVIDS, trace: { store: 'default' }, completedAt: start };
        last = (await jetstream(nc).publish(notificationSubject(chamber.toolId, chamber.chamberId), JSON.stringify(body))).seq;
      }
      await waitFor('all 33 runs applied', async () => worker.mark === last, 60_000);
      await worker.stop();
      await feed.stop();
      cache.close();

      expect(deadLetters).toEqual([]);
      const model = await store.monitorModels.get(chamber, 'R');
      expect(model?.version).toBe(1);
      expect(model?.model['baselineRunIds']).toEqual(Array.from({ length: 30 }, (_, k) => `r${k}`));
      // r29 completed Phase I: judged first with the 10 runs read, then again with all 29 before it, those
      // with every indicator's value (the fit's data); the cached reads come without them.
      expect(calls.get('r29')).toEqual([10, 29]);
      expect(baselinePoints.get('r29')?.[0]).toBe(0);
      expect(baselinePoints.get('r29')?.[1]).toBeGreaterThanOrEqual(29);
      expect(baselinePoints.get('r32')).toEqual([0]);
      for (const [runId, lengths] of calls) if (runId !== 'r29') expect({ runId, reads: lengths.length }).toEqual({ runId, reads: 1 });
      expect(calls.get('r32')).toEqual([10]);
      const runs = await store.uchart.history(chamber, { limit: 3 });
      expect(runs.map((r) => r.points.find((p) => p.indicatorKey === 'R|m:model')?.limitsVersion)).toEqual([1, 1, 1]);
    });
  });
});

describeWithInfra(['nats'], 'ChamberWorker fits a few at a time (fitSlots), against real NATS and SQLite', () => {
  /**
   * Three chambers complete Phase I together. Returns the most whole-history reads held at once (from
   * the read's start to the end of the evaluation on it) and the chambers' fitted models. A whole
   * read answers only once all three chambers have asked for their fit (their runs judged too short
   * of history), so the reads overlap unless the slots keep them apart, however the machine
   * schedules the workers.
   */
  async function fitTogether(fitSlots: Semaphore | undefined): Promise<{ maxHeld: number; models: number[] }> {
    let maxHeld = 0;
    const models: number[] = [];
    await withChamber('worker-fit-slots-', async ({ nc, store, reader }) => {
      const chambers = ['c1', 'c2', 'c3'].map((chamberId) => ({ toolId: 't1', chamberId }));
      for (const ch of chambers.slice(1)) {
        await store.chamberMetadata.upsert({ ...ch, svidCount: 1, collectionFreqHz: 1, contextDurationSeconds: 60, weight: 60, lastUpdated: new Date(), source: 'configured', observedRuns: 0 });
      }
      const base = createRunEvaluator();
      // The whole histories read (every point) and not yet evaluated.
      const whole = new WeakSet<object>();
      let held = 0;
      // The chambers whose Phase I run asked for its whole history (before waiting for a fit slot).
      const asked = new Set<string>();
      let allAsked: () => void = () => undefined;
      const together = new Promise<void>((r) => (allAsked = r));
      const evaluator = around(base, (input) => {
        try {
          const answer = base.evaluate(input);
          if (needsMoreHistory(answer) && asked.add(input.chamber.chamberId).size === chambers.length) allAsked();
          return answer;
        } finally {
          if (whole.delete(input.history)) held--;
        }
      });
      const cached = new UChartHistoryCache({ source: store.uchart, sizeMb: 8, runsPerChamber: base.historyRuns(undefined), leaveOut: isBaselineData });
      const cache: WorkerDeps['cache'] = {
        record: (run) => cached.record(run),
        invalidate: (ref) => cached.invalidate(ref),
        history: async (ref, opts) => {
          if (!opts.allPoints) return cached.history(ref, opts);
          maxHeld = Math.max(maxHeld, ++held);
          await together;
          const runs = await cached.history(ref, opts);
          whole.add(runs);
          return runs;
        },
      };
      const deps = { ...workerDeps({ nc, reader, cache: cached, store, deadLetters: [], now: () => new Date() }), evaluator, cache, ...(fitSlots ? { fitSlots } : {}) };
      const workers = chambers.map(
        (ch) => new ChamberWorker(ch, 1, deps, { processTimeoutMs: 30_000, maxAttempts: 3, idlePollMs: 60_000, maxTracePoints: 1_000_000, maxOutageBackoffMs: 1000, ownerId: 'defender-0' }),
      );
      const byKey = new Map(chambers.map((ch, i) => [ch.chamberId, workers[i]!]));
      const feed = await watchNotifications(nc, (s, seq) => byKey.get(s.split('.')[2] ?? '')?.notify(seq));
      for (const w of workers) w.start(() => undefined);
      const rand = seededRandom(7);
      const last = new Map<string, number>();
      // Every chamber's runs written first, then published round-robin: the three Phase I completions arrive together.
      const bodies: { ch: (typeof chambers)[number]; body: string }[] = [];
      for (let k = 0; k < 31; k++) {
        for (const ch of chambers) {
          const offset = normalDeviate(rand);
          const values = new Float64Array(60).map(() => 50 + offset + 0.1 * normalDeviate(rand));
          await store.traces.write({ ...ch, runId: `r${k}`, timing: { kind: 'regular', startSeconds: 1_800_000_000 + k * 60, frequencyHz: 1 }, svids: new Map([[SVIDS[0]!, values]]), steps: [] });
          const start = new Date(Date.UTC(2026, 10, 25, 0, k)).toISOString();
          bodies.push({ ch, body: JSON.stringify({ schema: 1, ...ch, runId: `r${k}`, recipe: 'R', contextWindow: { start, end: start }, svids: SVIDS, trace: { store: 'default' }, completedAt: start }) });
        }
      }
      for (const { ch, body } of bodies) last.set(ch.chamberId, (await jetstream(nc).publish(notificationSubject(ch.toolId, ch.chamberId), body)).seq);
      await waitFor('every run of the three chambers applied', async () => workers.every((w, i) => w.mark === last.get(chambers[i]!.chamberId)), 90_000);
      await Promise.all(workers.map((w) => w.stop()));
      await feed.stop();
      cached.close();
      for (const ch of chambers) models.push((await store.monitorModels.get(ch, 'R'))?.version ?? 0);
    });
    return { maxHeld, models };
  }

  it('holds one whole history at a time with one slot, and fits every chamber', async () => {
    expect(await fitTogether(new Semaphore(1))).toEqual({ maxHeld: 1, models: [1, 1, 1] });
  }, 120_000);

  it('without the bound, the same completions hold several at once (what the slot prevents)', async () => {
    const { maxHeld, models } = await fitTogether(undefined);
    expect(models).toEqual([1, 1, 1]);
    expect(maxHeld).toBeGreaterThan(1);
  }, 120_000);
});

/**
 * Equipment events (issue 49, ADR 0019) with real NATS and SQLite: published on the chamber's event
 * subject, read by its worker in stream order with its runs, committed at their sequence with the
 * monitor states they change; published again: skipped; malformed: dead-lettered with its reason.
 */
describeWithInfra(['nats'], 'ChamberWorker with equipment events, against real NATS and SQLite', () => {
  it('applies an event between two runs before the second, once; a bad event is dead-lettered', async () => {
    await withChamber('worker-events-', async ({ nc, store, reader, cache }) => {
      const deadLetters: string[] = [];
      const worker = new ChamberWorker(chamber, 1, workerDeps({ nc, reader, cache, store, deadLetters, now: () => new Date() }), {
        ownerId: 'defender-1',
        processTimeoutMs: 10_000,
        maxAttempts: 3,
        idlePollMs: 50,
        maxTracePoints: 1_000_000,
        maxOutageBackoffMs: 400,
      });
      worker.start(() => undefined);
      const event = (eventId: string, over: Record<string, unknown> = {}) =>
        JSON.stringify({ schema: 1, ...chamber, eventId, kind: 'pm', at: '2026-11-25T00:01:30.000Z', author: 'alice', ...over });
      const publishEvent = async (body: string) => (await jetstream(nc).publish(equipmentEventSubject(chamber.toolId, chamber.chamberId), body)).seq;
      try {
        await publishRunOf(nc, store, 0);
        await publishRunOf(nc, store, 1);
        // A PM between r1 and r2 (the default strategy re-baselines on it), published twice, and two bad events.
        const pmAt = await publishEvent(event('pm-1'));
        const again = await publishEvent(event('pm-1'));
        const badKind = await publishEvent(event('pm-2', { kind: 'lunch' }));
        const otherChamber = await publishEvent(event('pm-3', { chamberId: 'c9' }));
        const last = await publishRunOf(nc, store, 2);
        await waitFor('every message handled', async () => worker.mark === last, 30_000);

        expect(deadLetters.map((d) => d.split(':')[0])).toEqual(['dc.dead.invalid-event', 'dc.dead.subject-mismatch']);
        expect((await store.chamberEvents.list(chamber, { limit: 10 })).map((e) => [e.sequence, e.runId, e.event.kind, e.event.author])).toEqual([[pmAt, 'event:pm-1', 'pm', 'alice']]);
        // The history in stream order: the runs, the event's run without points, the dead letters.
        expect((await store.uchart.history(chamber, { limit: 10 })).map((r) => r.runId)).toEqual([
          'r0',
          'r1',
          'event:pm-1',
          `dead-letter:${badKind}:event:pm-2`,
          `dead-letter:${otherChamber}:event:pm-3`,
          'r2',
        ]);
        expect(again).toBe(pmAt + 1);
        // The PM started Phase I again before r2: r2 is its first run (counting only runs after the event).
        expect((await store.monitorState.get(chamber, 'R'))?.state).toEqual({ phase: 'collecting', modelVersion: 1, runs: 1, since: pmAt });
      } finally {
        await worker.stop();
      }
    });
  }, 60_000);
});
