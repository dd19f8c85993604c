import type { NatsConnection } from '@nats-io/nats-core';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { parseChamberKey, type AssignmentMap, type ChamberMemoryRecord, type DefenderStore, type MonitorModelRecord, type MonitorStateRecord } from '@defender/contracts';
import { AssignmentMapBucket, HeartbeatBucket, isStreamNotFound, StreamMissingError, STREAMS } from '@defender/nats-kv';
import { rebaselineRecords } from '@defender/pipeline';
import { openStore } from '@defender/store';
import { POINT_ELSEWHERE, type Target } from './context';
import { formatAlarmLine } from './format';
import { assignmentRows, defenderRows, explain, mapSummary, mapWeightUnit, normalizeDefender, type AssignmentRow, type Explanation, type StatusView } from './views';

/** A failure to report to the user (exit 1, message only). */
export class CtlError extends Error {
  override readonly name = 'CtlError';
}

/** `nats://a:4222 (NATS_SERVERS)`: the URL defenderctl connected to and where it came from. */
export function natsWhere(t: Target): string {
  return `${t.natsServers.join(',')} (${t.natsFrom})`;
}

async function openKv(nc: NatsConnection, t: Target, bucket: string): Promise<KV> {
  try {
    return await new Kvm(nc).open(bucket);
  } catch (err) {
    throw new CtlError(`KV bucket "${bucket}" cannot be opened at ${natsWhere(t)}: ${(err as Error).message}; if this is not your Defender cluster, ${POINT_ELSEWHERE}`, { cause: err });
  }
}

async function readMap(nc: NatsConnection, t: Target): Promise<AssignmentMap | null> {
  return (await new AssignmentMapBucket(await openKv(nc, t, t.buckets.assignments), t.buckets.assignments).read())?.map ?? null;
}

/** What of a Defender cluster a NATS server holds: its KV buckets (as streams `KV_<bucket>`) and streams. */
export interface ClusterPresence {
  /** False when the server has no JetStream at all (not a Defender cluster's NATS). */
  readonly jetstream: boolean;
  readonly found: readonly string[];
  readonly missing: readonly string[];
}

/** The KV buckets and streams of a Defender cluster that defenderctl reads, in a fixed order. */
export function clusterParts(t: Target): { name: string; stream: string }[] {
  return [
    ...[t.buckets.heartbeats, t.buckets.assignments].map((b) => ({ name: `KV bucket ${b}`, stream: `KV_${b}` })),
    ...Object.values(STREAMS).map((name) => ({ name: `stream ${name}`, stream: name })),
  ];
}

/** Which of the cluster's KV buckets and streams the server holds (it creates none). */
export async function clusterPresence(nc: NatsConnection, t: Target): Promise<ClusterPresence> {
  let jsm;
  try {
    jsm = await jetstreamManager(nc);
  } catch (err) {
    if (/jetstream.*not enabled|no responders|503/i.test((err as Error).message)) return { jetstream: false, found: [], missing: clusterParts(t).map((p) => p.name) };
    throw err;
  }
  const found: string[] = [];
  const missing: string[] = [];
  for (const p of clusterParts(t)) {
    const exists = await jsm.streams.info(p.stream).then(
      () => true,
      (err: unknown) => {
        if (isStreamNotFound(err) || /stream not found/i.test((err as Error).message)) return false;
        throw err;
      },
    );
    (exists ? found : missing).push(p.name);
  }
  return { jetstream: true, found, missing };
}

/**
 * The error for a NATS server that holds no Defender cluster: which URL defenderctl connected to
 * (and why that one), what it did not find there, and how to point it elsewhere.
 */
export function noClusterError(t: Target, presence: ClusterPresence): CtlError {
  const what = presence.jetstream
    ? `none of Defender's KV buckets or streams exist there (${presence.missing.join(', ')})`
    : 'the server has no JetStream (every Defender cluster keeps its state in JetStream)';
  return new CtlError(
    [
      `no Defender cluster found at ${natsWhere(t)}: connected, but ${what}.`,
      `If this is not your cluster's NATS, ${POINT_ELSEWHERE}.`,
      ...(presence.jetstream ? ['If it is, and NATS has just lost its store, the defenders and the leading controller create them again within a heartbeat: run defenderctl status again.'] : []),
    ].join('\n'),
  );
}

/**
 * Checks that the server holds a Defender cluster (at least one of its buckets or streams) before a
 * command reads it; returns what it found.
 * @throws CtlError ({@link noClusterError}) when it holds none, or has no JetStream.
 */
export async function requireCluster(nc: NatsConnection, t: Target): Promise<ClusterPresence> {
  const p = await clusterPresence(nc, t);
  if (!p.jetstream || p.found.length === 0) throw noClusterError(t, p);
  return p;
}

/** The message for a bucket or stream NATS does not hold (restarted with an empty store, or never created). */
function missingMessage(what: string, who: string): string {
  return `${what} is missing (NATS restarted with an empty store, or it was never created): ${who}`;
}

/** `read()`, or null and a problem when `err` says the bucket or stream is missing; other errors propagate. */
async function unlessMissing<T>(read: () => Promise<T>, problem: string, problems: string[]): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    if (isStreamNotFound(err) || err instanceof StreamMissingError || isStreamNotFound((err as { cause?: unknown }).cause) || /stream not found|bucket not found|does not exist/i.test((err as Error).message)) {
      problems.push(problem);
      return null;
    }
    throw err;
  }
}

/** Each Defender stream: its identity (creation time), messages and last sequence, or missing. */
async function streamStates(nc: NatsConnection, problems: string[]): Promise<StatusView['streams']> {
  const jsm = await jetstreamManager(nc);
  return Promise.all(
    Object.values(STREAMS).map(async (name) => {
      const info = await unlessMissing(
        () => jsm.streams.info(name),
        missingMessage(`stream ${name}`, name === STREAMS.notifications ? 'defenders create it again; chambers re-base onto it (ADR 0007)' : 'defenders create it again'),
        problems,
      );
      return info ? { name, exists: true, created: info.created, messages: info.state.messages, lastSequence: info.state.last_seq } : { name, exists: false };
    }),
  );
}

/**
 * Chambers of the map whose high-water mark counts in another notification stream than the one NATS
 * holds now (`created` of the stream): their owner pauses them until it has re-based them (ADR 0007).
 */
async function chambersOnOtherStream(store: DefenderStore, map: AssignmentMap | null, streamId: string): Promise<{ checked: number; other: string[]; unbound: number }> {
  const keys = Object.keys(map?.assignments ?? {}).sort();
  const other: string[] = [];
  let unbound = 0;
  for (let i = 0; i < keys.length; i += 32) {
    await Promise.all(
      keys.slice(i, i + 32).map(async (key) => {
        const st = await store.chamberState.get(parseChamberKey(key));
        if (!st || st.streamId === undefined) unbound++;
        else if (st.streamId !== streamId) other.push(key);
      }),
    );
  }
  return { checked: keys.length, other: other.sort(), unbound };
}

async function controllerStatus(url: string): Promise<StatusView['controllers'][number]> {
  try {
    const res = await fetch(`${url}/api/v1/status`, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const b = (await res.json()) as Record<string, unknown>;
    return {
      url,
      reachable: true,
      controllerId: (b['controllerId'] as string) ?? null,
      isLeader: b['isLeader'] === true,
      clusterState: (b['clusterState'] as string | null) ?? null,
      lifecycle: (b['lifecycle'] as string | null) ?? null,
      pendingTrigger: (b['pendingTrigger'] as { trigger: string; deadline: string } | null) ?? null,
      balanceBy: b['balanceBy'] === 'load' || b['balanceBy'] === 'samples' ? b['balanceBy'] : null,
    };
  } catch (err) {
    return { url, reachable: false, error: (err as Error).message };
  }
}

async function readLeader(nc: NatsConnection, t: Target): Promise<StatusView['leader']> {
  let kv: KV;
  try {
    kv = await new Kvm(nc).open(t.buckets.elections);
  } catch {
    // No election bucket: no agent has run against this NATS yet (reported as "no leader").
    return null;
  }
  // The bucket may vanish between the open and the read (NATS restarted empty): as good as none.
  const e = await kv.get(t.electionName).catch((err: unknown) => {
    if (isStreamNotFound(err) || /stream not found/i.test((err as Error).message)) return null;
    throw err;
  });
  if (!e || e.operation !== 'PUT') return null;
  const r = e.json<Record<string, unknown>>();
  const expires = Number(r['leaseExpiresAtMs']);
  return {
    holder: String(r['holder']),
    epoch: String(r['token']),
    leaseExpiresAt: Number.isFinite(expires) ? new Date(expires).toISOString() : '?',
    valid: r['released'] !== true && expires > Date.now(),
  };
}

/**
 * The cluster as NATS (and, given a store, the chambers' marks) show it. A missing bucket or stream
 * is reported in `problems` with what recreates it, never a crash.
 */
export async function status(nc: NatsConnection, t: Target, store: DefenderStore | null = null): Promise<StatusView> {
  const problems: string[] = [];
  const readHeartbeats = async () => new HeartbeatBucket(await new Kvm(nc).open(t.buckets.heartbeats), t.buckets.heartbeats).readAll();
  const readMapOrMissing = async () => new AssignmentMapBucket(await new Kvm(nc).open(t.buckets.assignments), t.buckets.assignments).read();
  const [hb, stored, leader, controllers, streams] = await Promise.all([
    unlessMissing(readHeartbeats, missingMessage(`KV bucket ${t.buckets.heartbeats}`, 'every defender creates it again at its next heartbeat'), problems),
    unlessMissing(readMapOrMissing, missingMessage(`KV bucket ${t.buckets.assignments}`, 'the leading controller creates it again and publishes a map above every version it saw'), problems),
    readLeader(nc, t),
    Promise.all(t.controllerUrls.map(controllerStatus)),
    streamStates(nc, problems),
  ]);
  const map = stored?.map ?? null;
  const notifications = streams.find((x) => x.name === STREAMS.notifications);
  let marks: StatusView['marks'] = null;
  if (store && notifications?.created) {
    const r = await chambersOnOtherStream(store, map, notifications.created);
    marks = { checked: r.checked, onOtherStream: r.other, unbound: r.unbound };
    if (r.other.length > 0) {
      problems.push(
        `${r.other.length} chamber(s) have a high-water mark of another (older) ${STREAMS.notifications} stream: paused until their owner re-bases them onto the current one ` +
          `(automatic within a heartbeat; if it persists, check that their owner runs and reaches the store): ${r.other.slice(0, 10).join(', ')}${r.other.length > 10 ? ', ...' : ''}`,
      );
    }
  }
  return {
    leader,
    controllers,
    map: mapSummary(map),
    defenders: defenderRows(hb?.heartbeats ?? [], map, Date.now()),
    streams,
    marks,
    problems,
  };
}

/** Opens the store when the target names one; null (and a note) when it cannot be reached. */
export async function tryStore(t: Target, note: (s: string) => void): Promise<DefenderStore | null> {
  if (!t.store) return null;
  try {
    return await openStore(t.store);
  } catch (err) {
    note(`store ${t.storeLabel} not reachable (${(err as Error).message}): weights not shown`);
    return null;
  }
}

export async function assignments(nc: NatsConnection, t: Target, defenderRef: string | undefined, note: (s: string) => void): Promise<{ mapVersion: number; defender: string | null; chambers: AssignmentRow[] }> {
  let defender: string | undefined;
  if (defenderRef !== undefined) {
    defender = normalizeDefender(defenderRef);
    if (!defender) throw new CtlError(`--defender must be N or defender-N, got "${defenderRef}"`);
  }
  const map = await readMap(nc, t);
  if (!map) throw new CtlError('no assignment map has been published yet');
  const store = await tryStore(t, note);
  const weights = new Map<string, number>();
  try {
    for (const m of (await store?.chamberMetadata.list()) ?? []) weights.set(`${m.toolId}:${m.chamberId}`, m.weight);
  } finally {
    await store?.close();
  }
  return { mapVersion: map.version, defender: defender ?? null, chambers: assignmentRows(map, weights, defender) };
}

/** Every kept map version (oldest first), skipping unreadable ones. */
export async function mapHistory(nc: NatsConnection, t: Target): Promise<AssignmentMap[]> {
  const kv = await openKv(nc, t, t.buckets.assignments);
  const out = (await new AssignmentMapBucket(kv, t.buckets.assignments).history()).map((s) => s.map);
  return out.sort((a, b) => a.version - b.version);
}

export async function explainChamber(nc: NatsConnection, t: Target, key: string, note: (s: string) => void): Promise<Explanation> {
  let ref;
  try {
    ref = parseChamberKey(key);
  } catch (err) {
    throw new CtlError((err as Error).message, { cause: err });
  }
  const [history, st] = await Promise.all([mapHistory(nc, t), status(nc, t)]);
  const store = await tryStore(t, note);
  let weight: { value: number; source: string } | undefined;
  let monitor: MonitorStateRecord[] = [];
  let models: MonitorModelRecord[] = [];
  let memory: ChamberMemoryRecord | undefined;
  try {
    const [m, states, remembered] = await Promise.all([store?.chamberMetadata.get(ref), store?.monitorState.list(ref), store?.chamberMemory.get(ref)]);
    if (m) weight = { value: m.weight, source: `${m.svidCount} SVIDs x ${m.collectionFreqHz} Hz x ${m.contextDurationSeconds} s, ${m.source}` };
    monitor = states ?? [];
    memory = remembered;
    // The model each judging recipe is judged with.
    const judging = monitor.flatMap((r) => (r.state.phase === 'judging' ? [{ recipe: r.recipe, version: r.state.modelVersion }] : []));
    models = (await Promise.all(judging.map((j) => store?.monitorModels.get(ref, j.recipe, j.version)))).filter((x): x is MonitorModelRecord => x !== undefined);
  } finally {
    await store?.close();
  }
  return explain(key, history, { weight, alive: new Map(st.defenders.map((d) => [d.defenderId, d.alive])), monitor, models, memory, weightUnit: mapWeightUnit(st.controllers) });
}

/**
 * Prints the last `n` alarms (and holds with `holds`) from the defense-events stream, then, with
 * `follow`, every new one until `signal` aborts.
 */
export async function tailAlarms(
  nc: NatsConnection,
  opts: { n: number; follow: boolean; holds: boolean; chamber?: string; json: boolean; signal: AbortSignal; write: (line: string) => void },
): Promise<number> {
  const jsm = await jetstreamManager(nc);
  let last: number;
  try {
    last = (await jsm.streams.info(STREAMS.defenseEvents)).state.last_seq;
  } catch (err) {
    throw new CtlError(`stream ${STREAMS.defenseEvents} not found: no defender has run against this NATS yet (${(err as Error).message})`, { cause: err });
  }
  const want = (subject: string, b: Record<string, unknown>) =>
    (opts.holds || subject.startsWith('defense.alarms.')) && (!opts.chamber || `${String(b['toolId'])}:${String(b['chamberId'])}` === opts.chamber);
  // Walk back far enough to find n matching events (filters may skip many), then print in order.
  const backlog: { subject: string; at: Date; body: Record<string, unknown> }[] = [];
  if (last > 0 && opts.n > 0) {
    const start = Math.max(1, last - Math.max(opts.n * 20, 2000) + 1);
    const c = await jetstream(nc).consumers.get(STREAMS.defenseEvents, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start });
    const msgs = await c.fetch({ max_messages: last - start + 1, expires: 5000 });
    for await (const m of msgs) {
      const body = m.json<Record<string, unknown>>();
      if (want(m.subject, body)) backlog.push({ subject: m.subject, at: m.time, body });
      if (m.seq >= last) break;
    }
  }
  let printed = 0;
  for (const e of backlog.slice(-opts.n)) {
    opts.write(opts.json ? JSON.stringify({ subject: e.subject, at: e.at.toISOString(), ...e.body }) : formatAlarmLine(e.subject, e.at, e.body));
    printed++;
  }
  if (!opts.follow) return printed;
  const c = await jetstream(nc).consumers.get(STREAMS.defenseEvents, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: last + 1 });
  const msgs = await c.consume();
  opts.signal.addEventListener('abort', () => void msgs.close(), { once: true });
  for await (const m of msgs) {
    const body = m.json<Record<string, unknown>>();
    if (!want(m.subject, body)) continue;
    opts.write(opts.json ? JSON.stringify({ subject: m.subject, at: m.time.toISOString(), ...body }) : formatAlarmLine(m.subject, m.time, body));
    printed++;
  }
  return printed;
}

/**
 * Drains a defender gracefully: on the local fab through its control endpoint (SIGTERM: the
 * defender finishes in-flight runs, removes its heartbeat and releases its stable ID), then waits
 * for the controller to publish a map without it.
 */
export async function drain(nc: NatsConnection, t: Target, ref: string, timeoutMs: number, note: (s: string) => void): Promise<{ defender: string; process: string; mapVersion: number | null; chambersMoved: number | null }> {
  const defender = normalizeDefender(ref);
  if (!defender) throw new CtlError(`drain needs a defender (N or defender-N), got "${ref}"`);
  const before = await status(nc, t);
  const row = before.defenders.find((d) => d.defenderId === defender);
  if (!row || !row.alive) throw new CtlError(`${defender} is not running (known: ${before.defenders.filter((d) => d.alive).map((d) => d.defenderId).join(', ') || 'none'})`);
  if (!t.control) {
    throw new CtlError(
      `no local fab control endpoint: a defender drains when it gets SIGTERM; in Kubernetes: kubectl delete pod ${row.podName ?? '<its pod>'} (graceful, SHUTDOWN_DRAIN_TIMEOUT_SECONDS)`,
    );
  }
  note(`draining ${defender} (${row.chambers} chambers) ...`);
  const res = await fetch(`${t.control.url}/control/defenders/drain`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.control.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ defender }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) throw new CtlError(`drain failed: ${String(body['error'] ?? `HTTP ${res.status}`)}`);
  const fromVersion = before.map?.version ?? 0;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const m = await readMap(nc, t);
    if (m && m.version > fromVersion && !(defender in m.defenderInfo)) {
      return { defender, process: String(body['drained']), mapVersion: m.version, chambersMoved: m.statistics.chambersMoved };
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  note(`${defender} stopped, but no map without it was published within ${Math.round(timeoutMs / 1000)} s (the scale window may still be open)`);
  return { defender, process: String(body['drained']), mapVersion: null, chambersMoved: null };
}

/** What `rebaseline` wrote: one pending re-baseline per current limit set (versioned, audited in the store). */
export interface RebaselineResult {
  readonly chamber: string;
  readonly reason: string;
  readonly requestedBy: string;
  readonly excludeRunIds: readonly string[];
  readonly minRuns: number | null;
  readonly requests: readonly { readonly indicatorKey: string; readonly replacesVersion: number; readonly version: number }[];
}

/**
 * Re-baselines a chamber (or one recipe of it): every indicator's current limits (and the chamber
 * monitor's model) get a pending re-baseline at the next version; the defender that owns the chamber
 * collects a new Phase I from the next run on (leaving `excludeRunIds` out) and freezes the new limits
 * at that version. The requests are limit-set versions in the store: who asked, when, why, and which
 * runs were excluded stay with the limits they replace.
 */
export async function rebaseline(
  store: DefenderStore,
  key: string,
  request: { readonly recipe?: string; readonly reason: string; readonly requestedBy: string; readonly excludeRunIds: readonly string[]; readonly minRuns?: number },
  now: Date,
): Promise<RebaselineResult> {
  let chamber;
  try {
    chamber = parseChamberKey(key);
  } catch (err) {
    throw new CtlError(`"${key}" is not a chamber key <tool>:<chamber>`, { cause: err });
  }
  const [current, models] = await Promise.all([store.uchart.currentLimitSets(chamber), store.monitorModels.versions(chamber)]);
  const records = rebaselineRecords(chamber, current, request, now, models);
  if (records.length === 0) {
    const what = request.recipe ? `recipe ${request.recipe} of ${key}` : key;
    throw new CtlError(
      current.length === 0 && models.length === 0
        ? `${what} has no limits yet (still in its first Phase I): nothing to re-baseline`
        : `${what} has nothing to re-baseline (every indicator already waits for a new Phase I, or none is of that recipe)`,
    );
  }
  const previous = new Map(current.map((r) => [r.indicatorKey, r.version]));
  for (const r of records) await store.uchart.putLimitSet(r);
  return {
    chamber: key,
    reason: request.reason,
    requestedBy: request.requestedBy,
    excludeRunIds: [...request.excludeRunIds],
    minRuns: request.minRuns ?? null,
    requests: records.map((r) => ({ indicatorKey: r.indicatorKey, replacesVersion: previous.get(r.indicatorKey) ?? 0, version: r.version })),
  };
}
