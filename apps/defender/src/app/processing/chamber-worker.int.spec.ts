import { connect } from '@nats-io/transport-node';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { jetstream } from '@nats-io/jetstream';
import { notificationSubject } from '@defender/contracts';
import { describeWithInfra, startNatsServer, waitFor } from '@defender/infra-harness';
import { ensureStreams, NotificationReader, publishOnce, watchNotifications } from '@defender/nats-kv';
import { ChamberWorker, createRunEvaluator, Semaphore, WorkerDeps } from '@defender/pipeline';
import { SqliteStore, UChartHistoryCache } from '@defender/store';

const chamber = { toolId: 't1', chamberId: 'c1' };
const SVIDS = ['pressure'];

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

/**
 * Guarantee 1 (exclusive) with real NATS and a real SQLite store, deterministically: worker A owns
 * the chamber with epoch 1; worker B claims it with epoch 2 while A is idle; A's next write is
 * rejected by the store, A stops, and B applies every later run exactly once.
 */
describeWithInfra(['nats'], 'ChamberWorker fencing against real NATS and SQLite', () => {
  it('a deposed worker cannot write; the new owner resumes exactly after the high-water mark', async () => {
    const nats = await startNatsServer();
    const dir = mkdtempSync(join(tmpdir(), 'worker-fence-'));
    const nc = await connect({ servers: nats.url });
    const store = await SqliteStore.open({ filename: join(dir, 'd.db') });
    try {
      await ensureStreams(nc);
      await store.chamberMetadata.upsert({ ...chamber, svidCount: 1, collectionFreqHz: 1, contextDurationSeconds: 60, weight: 60, lastUpdated: new Date(), source: 'configured', observedRuns: 0 });
      const reader = await NotificationReader.open(nc);
      const cache = new UChartHistoryCache({ source: store.uchart, sizeMb: 8 });
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
      const publishRun = async (k: number) => {
        const values = new Float64Array(60).map((_, i) => 50 + Math.sin(i + k));
        await store.traces.write({ ...chamber, runId: `r${k}`, timing: { kind: 'regular', startSeconds: 1_800_000_000 + k * 60, frequencyHz: 1 }, svids: new Map([[SVIDS[0]!, values]]), steps: [] });
        const start = new Date(Date.UTC(2026, 10, 25, 0, k)).toISOString();
        const body = { schema: 1, ...chamber, runId: `r${k}`, recipe: 'R', contextWindow: { start, end: start }, svids: SVIDS, trace: { store: 'default' }, completedAt: start };
        return (await jetstream(nc).publish(notificationSubject('t1', 'c1'), JSON.stringify(body))).seq;
      };

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
      cache.close();
    } finally {
      await store.close();
      await nc.close();
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
