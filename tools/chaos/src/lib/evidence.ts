import { jetstreamManager, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import { SqliteStore } from '@defender/store';
import { STREAMS } from '@defender/nats-kv';
import type { ChaosCluster, Proc } from './cluster';
import type { RunPublisher } from './publisher';
import type { ChamberEvidence, StoredNotificationRun, StreamEvidence } from './analysis';
import { chamberKeyOf } from './workload';

/** RUN_HOLD flag bit on every point of a run that put its chamber on hold (pipeline evaluator README). */
const RUN_HOLD = 1 << 2;

/** Reads every chamber's committed runs, alarms and mark back from the store. */
export async function storeEvidence(cluster: ChaosCluster, publisher: RunPublisher): Promise<ChamberEvidence[]> {
  const store = await SqliteStore.open({ filename: cluster.sqlitePath, busyTimeoutMs: 20_000 });
  try {
    const published = publisher.published();
    const out: ChamberEvidence[] = [];
    for (const ch of cluster.chambers) {
      const ref = { toolId: ch.toolId, chamberId: ch.chamberId };
      const key = chamberKeyOf(ch);
      const [runs, alarms, state] = await Promise.all([
        store.uchart.history(ref, { limit: 1_000_000 }),
        store.alarms.list(ref, { limit: 1_000_000 }),
        store.chamberState.get(ref),
      ]);
      out.push({
        key,
        published: published.get(key) ?? [],
        committed: runs.map((r) => ({
          seq: r.sequence,
          runId: r.runId,
          epoch: r.epoch,
          committedAt: r.committedAt.getTime(),
          hold: r.points.some((p) => (p.flags & RUN_HOLD) !== 0),
          empty: r.points.length === 0,
        })),
        highWaterMark: state?.highWaterMark ?? 0,
        alarms: alarms.map((a) => ({ seq: a.sequence, runId: a.runId, ruleId: a.ruleId, indicatorKey: a.indicatorKey })),
      });
    }
    return out;
  } finally {
    await store.close();
  }
}

/**
 * Every notification in the stream, by subject, read from the stream's leader (not a replica):
 * the runs the defenders must have applied, whatever the publisher was acknowledged.
 */
async function storedRuns(jsm: JetStreamManager): Promise<Record<string, StoredNotificationRun[]>> {
  const out: Record<string, StoredNotificationRun[]> = {};
  const { state } = await jsm.streams.info(STREAMS.notifications);
  if (state.messages === 0) return out;
  const get = async (seq: number): Promise<StoredMsg | null> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await jsm.streams.getMessage(STREAMS.notifications, { seq });
      } catch (err) {
        if (attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
  };
  const batch = 64;
  for (let from = state.first_seq; from <= state.last_seq; from += batch) {
    const seqs = Array.from({ length: Math.min(batch, state.last_seq - from + 1) }, (_, i) => from + i);
    for (const m of await Promise.all(seqs.map(get))) {
      if (!m) continue; // deleted (outage-past-duplicate-window deletes its replays)
      let runId = '?';
      try {
        runId = String((JSON.parse(new TextDecoder().decode(m.data)) as { runId?: unknown }).runId ?? '?');
      } catch {
        // Not JSON: listed under '?', which no publication matches.
      }
      (out[m.subject] ??= []).push({ seq: m.seq, runId });
    }
  }
  return out;
}

/** Message counts by subject of the notification, event and dead-letter streams. */
export async function streamEvidence(cluster: ChaosCluster): Promise<StreamEvidence> {
  const jsm = await jetstreamManager(cluster.nc);
  const subjects = async (stream: string, filter: string): Promise<Record<string, number>> => {
    const info = await jsm.streams.info(stream, { subjects_filter: filter });
    return { ...(info.state.subjects ?? {}) };
  };
  const deadLetters = await subjects(STREAMS.deadLetters, 'dc.dead.*');
  const deadLetterDetails: string[] = [];
  const dl = await jsm.streams.info(STREAMS.deadLetters);
  for (let seq = dl.state.first_seq; dl.state.messages > 0 && seq <= dl.state.last_seq && deadLetterDetails.length < 100; seq++) {
    const m = await jsm.streams.getMessage(STREAMS.deadLetters, { seq }).catch(() => null);
    if (!m) continue;
    try {
      const d = JSON.parse(new TextDecoder().decode(m.data)) as { reason: string; subject: string; streamSequence: number; detail: string; defenderId: string; attempts: number; deadLetteredAt: string };
      deadLetterDetails.push(`${d.reason}: ${d.subject} seq ${d.streamSequence} by ${d.defenderId} after ${d.attempts} attempt(s) at ${d.deadLetteredAt}: ${d.detail}`);
    } catch (err) {
      deadLetterDetails.push(`${m.subject} seq ${seq}: unreadable dead letter (${(err as Error).message})`);
    }
  }
  return {
    notifications: await subjects(STREAMS.notifications, 'dc.*.*.completed'),
    storedRuns: await storedRuns(jsm),
    alarms: await subjects(STREAMS.defenseEvents, 'defense.alarms.>'),
    holds: await subjects(STREAMS.defenseEvents, 'defense.holds.>'),
    deadLetters,
    deadLetterDetails,
  };
}

/** Waits until every chamber's high-water mark reached its last published run; returns the chambers still behind. */
export async function waitCaughtUp(cluster: ChaosCluster, publisher: RunPublisher, timeoutMs: number): Promise<string[]> {
  const store = await SqliteStore.open({ filename: cluster.sqlitePath, busyTimeoutMs: 20_000 });
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const behind: string[] = [];
      for (const ch of cluster.chambers) {
        const runs = publisher.published().get(chamberKeyOf(ch)) ?? [];
        const last = runs.at(-1)?.seq ?? 0;
        const hwm = (await store.chamberState.get({ toolId: ch.toolId, chamberId: ch.chamberId }))?.highWaterMark ?? 0;
        // The text names the mark only: a chamber still stuck at it in a later scenario is carried over.
        if (hwm < last) behind.push(`${chamberKeyOf(ch)} stuck at mark ${hwm}`);
      }
      if (behind.length === 0 || Date.now() > deadline) return behind;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await store.close();
  }
}

/** Fencing as the defenders report it: the metric of the live ones and the log lines of all (dead ones included). */
export interface FencingEvidence {
  /** Sum of defender_fenced_writes_total over defenders that answered /metrics. */
  readonly metricTotal: number;
  /** `fenced: a newer owner holds the chamber` log lines, by process. */
  readonly logLines: Readonly<Record<string, number>>;
  readonly logTotal: number;
}

export async function fencingEvidence(cluster: ChaosCluster): Promise<FencingEvidence> {
  let metricTotal = 0;
  for (const p of cluster.defenders) {
    const text = await cluster.metrics(p);
    const m = text ? /^defender_fenced_writes_total(?:\{[^}]*\})? (\d+(?:\.\d+)?)$/m.exec(text) : null;
    if (m) metricTotal += Number(m[1]);
  }
  const logLines: Record<string, number> = {};
  let logTotal = 0;
  for (const p of cluster.defenders) {
    const n = fencedLogLines(p);
    if (n > 0) logLines[p.name] = n;
    logTotal += n;
  }
  return { metricTotal, logLines, logTotal };
}

export function fencedLogLines(p: Proc): number {
  return logLines(p, 'fenced: a newer owner holds the chamber');
}

/** Log lines of a process whose `msg` is exactly `msg`. */
export function logLines(p: Proc, msg: string): number {
  const needle = `"msg":${JSON.stringify(msg)}`;
  return p.app.stdout().split('\n').filter((l) => l.includes(needle)).length;
}

/** Log lines at warn or above in `text` (a process's JSON log), most frequent first, as `n x msg`. */
export function warnings(text: string, limit = 5): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const j = JSON.parse(line) as { level?: number | string; msg?: string; err?: unknown };
      const severe = j.level === 'error' || j.level === 'fatal' || (typeof j.level === 'number' && j.level >= 50);
      if (severe || j.level === 'warn' || (typeof j.level === 'number' && j.level >= 40)) {
        out.push(`${j.msg ?? line}${severe && j.err !== undefined ? ` (${String(j.err).slice(0, 200)})` : ''}`);
      }
    } catch {
      out.push(line.slice(0, 200));
    }
  }
  const counts = new Map<string, number>();
  for (const m of out) counts.set(m, (counts.get(m) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, limit).map(([m, n]) => `${n} x ${m}`);
}
