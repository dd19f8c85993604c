import type { AssignmentMap } from '@defender/contracts';
import type { MapHeadRecord, MapRecord } from './cluster';
import type { PublishedRun } from './publisher';

/** Map version of an owner epoch (`mapVersion x 2^21 + generation`, ADR 0002). */
export const EPOCH_GENERATION_SPAN = 2 ** 21;
export const mapVersionOfEpoch = (epoch: number): number => Math.floor(epoch / EPOCH_GENERATION_SPAN);

/** A committed run as read back from the store. */
export interface CommittedRun {
  readonly seq: number;
  readonly runId: string;
  readonly epoch: number;
  readonly committedAt: number;
  /** The run put the chamber on hold (RUN_HOLD flag on its points). */
  readonly hold: boolean;
  /** No points: a dead-lettered run the chamber moved past. */
  readonly empty: boolean;
}

export interface StoredAlarm {
  readonly seq: number;
  readonly runId: string;
  readonly ruleId: string;
  readonly indicatorKey: string;
}

/** Everything known about one chamber at check time. */
export interface ChamberEvidence {
  readonly key: string;
  readonly published: readonly PublishedRun[];
  /** Committed runs, in sequence order. */
  readonly committed: readonly CommittedRun[];
  readonly highWaterMark: number;
  readonly alarms: readonly StoredAlarm[];
}

/** One notification as the stream's leader holds it at the end of a scenario. */
export interface StoredNotificationRun {
  readonly seq: number;
  readonly runId: string;
}

/** Message counts of the JetStream streams, by subject. */
export interface StreamEvidence {
  readonly notifications: Readonly<Record<string, number>>;
  /**
   * The notification stream's content by subject, read from its leader at the end: what the
   * defenders must apply. Without it, the publisher's acknowledgements stand for it.
   */
  readonly storedRuns?: Readonly<Record<string, readonly StoredNotificationRun[]>>;
  readonly alarms: Readonly<Record<string, number>>;
  readonly holds: Readonly<Record<string, number>>;
  readonly deadLetters: Readonly<Record<string, number>>;
  /** The dead letters themselves (reason, subject, sequence, detail, defender), when any. */
  readonly deadLetterDetails?: readonly string[];
}

export interface InvariantResult {
  readonly id: string;
  readonly title: string;
  readonly ok: boolean;
  /** What was checked, in numbers. */
  readonly checked: string;
  /** The violations (at most the first 1,000). */
  readonly violations: readonly string[];
  readonly violationCount: number;
  /** Violations already reported by an earlier scenario on the same cluster (not counted again). */
  readonly carriedOver?: number;
  /**
   * false: a guarantee of a dependency, not of Defender (NATS's durability on a cluster): reported
   * with its violations, but the scenario does not fail on it.
   */
  readonly blocking?: boolean;
}

class Collector {
  readonly list: string[] = [];
  count = 0;
  add(v: string): void {
    this.count++;
    if (this.list.length < 1000) this.list.push(v);
  }
}

const subjectOf = (key: string, kind: 'completed' | 'alarms' | 'holds'): string => {
  const [tool, chamber] = key.split(':') as [string, string];
  return kind === 'completed' ? `dc.${tool}.${chamber}.completed` : `defense.${kind}.${tool}.${chamber}`;
};

/**
 * Checks the guarantees of design.md section 3 that can be read from the store and the streams
 * after the fact:
 *
 * - every published run applied exactly once and in order (committed sequences == published
 *   sequences, same run ids, high-water mark == last published), and nothing else in the stream;
 * - one owner at a time: per chamber the committing epoch never decreases, neither in sequence
 *   order nor in commit-time order (a deposed owner's late write would show as an older epoch
 *   after a newer one), and commits happen in sequence order;
 * - no alarm doubled: alarm identities unique, each on a committed run of that id, and the alarm
 *   (and hold) streams hold exactly the stored ones;
 * - no valid run dead-lettered.
 */
export function checkInvariants(chambers: readonly ChamberEvidence[], streams: StreamEvidence, opts: { natsCluster?: boolean } = {}): InvariantResult[] {
  const once = new Collector();
  const hwm = new Collector();
  const stream = new Collector();
  const owner = new Collector();
  const alarms = new Collector();
  const holds = new Collector();
  let published = 0;
  let committed = 0;
  let storedAlarms = 0;
  let streamAlarms = 0;
  let storedHolds = 0;
  let streamHolds = 0;
  for (const c of chambers) {
    published += c.published.length;
    committed += c.committed.length;
    // What the defenders must apply: the stream's content when it was read, else what the
    // publisher was acknowledged (the same, unless NATS lost or moved an acknowledged message).
    const stored = streams.storedRuns?.[subjectOf(c.key, 'completed')];
    const want: readonly { seq: number; runId: string }[] = [...(stored ?? c.published)].sort((a, b) => a.seq - b.seq);
    const source = stored ? 'in the stream' : 'published';
    let prevSeq = 0;
    for (const p of c.published) {
      if (p.seq <= prevSeq) once.add(`${c.key}: run ${p.runId} got sequence ${p.seq} after ${prevSeq}`);
      prevSeq = p.seq;
    }
    const got = new Map(c.committed.map((r) => [r.seq, r]));
    const wantSeqs = new Set(want.map((p) => p.seq));
    for (const p of want) {
      const r = got.get(p.seq);
      if (!r) once.add(`${c.key}: run ${p.runId} (seq ${p.seq}) was never applied`);
      else if (r.runId !== p.runId) once.add(`${c.key}: seq ${p.seq} applied as run ${r.runId}, ${source} as ${p.runId}`);
      else if (r.empty) once.add(`${c.key}: run ${p.runId} (seq ${p.seq}) was committed empty (dead-lettered)`);
    }
    for (const r of c.committed) if (!wantSeqs.has(r.seq)) once.add(`${c.key}: seq ${r.seq} (run ${r.runId}) applied but ${stored ? 'not in the stream' : 'never published'}`);
    const runIds = new Set<string>();
    for (const r of c.committed) {
      if (runIds.has(r.runId)) once.add(`${c.key}: run ${r.runId} applied twice`);
      runIds.add(r.runId);
    }
    const last = want.at(-1)?.seq ?? 0;
    if (c.highWaterMark !== last) hwm.add(`${c.key}: high-water mark ${c.highWaterMark}, last ${source} ${last}`);
    if (stored) {
      const storedAt = new Map<string, number>();
      for (const s of stored) {
        const twice = storedAt.get(s.runId);
        if (twice !== undefined) stream.add(`${c.key}: run ${s.runId} stored twice (seq ${twice} and ${s.seq})`);
        else storedAt.set(s.runId, s.seq);
      }
      const acked = new Set<string>();
      for (const p of c.published) {
        acked.add(p.runId);
        const s = storedAt.get(p.runId);
        if (s === undefined) stream.add(`${c.key}: run ${p.runId} acknowledged at seq ${p.seq}, not in the stream`);
        else if (s !== p.seq) stream.add(`${c.key}: run ${p.runId} acknowledged at seq ${p.seq}, stored at seq ${s}`);
      }
      for (const s of stored) if (!acked.has(s.runId)) stream.add(`${c.key}: run ${s.runId} stored at seq ${s.seq}, never acknowledged`);
    } else {
      const inStream = streams.notifications[subjectOf(c.key, 'completed')] ?? 0;
      if (inStream !== c.published.length) stream.add(`${c.key}: ${inStream} notifications in the stream, ${c.published.length} acknowledged to the publisher`);
    }

    const bySeq = [...c.committed].sort((a, b) => a.seq - b.seq);
    for (const [a, b] of pairs(bySeq)) {
      if (b.epoch < a.epoch) owner.add(`${c.key}: seq ${b.seq} committed by epoch ${b.epoch} (map v${mapVersionOfEpoch(b.epoch)}) after seq ${a.seq} by ${a.epoch} (v${mapVersionOfEpoch(a.epoch)})`);
      if (b.committedAt < a.committedAt) owner.add(`${c.key}: seq ${b.seq} committed at ${b.committedAt}, before seq ${a.seq} at ${a.committedAt}`);
    }
    const byTime = [...c.committed].sort((a, b) => a.committedAt - b.committedAt || a.seq - b.seq);
    let maxEpoch = -1;
    for (const r of byTime) {
      if (r.epoch < maxEpoch) owner.add(`${c.key}: seq ${r.seq} committed at ${r.committedAt} by epoch ${r.epoch}, older than epoch ${maxEpoch} seen earlier`);
      maxEpoch = Math.max(maxEpoch, r.epoch);
    }

    storedAlarms += c.alarms.length;
    const ids = new Set<string>();
    for (const a of c.alarms) {
      const id = `${a.seq}|${a.ruleId}|${a.indicatorKey}`;
      if (ids.has(id)) alarms.add(`${c.key}: alarm ${id} stored twice`);
      ids.add(id);
      const r = got.get(a.seq);
      if (!r) alarms.add(`${c.key}: alarm ${id} on seq ${a.seq}, which is not committed`);
      else if (r.runId !== a.runId) alarms.add(`${c.key}: alarm ${id} names run ${a.runId}, seq ${a.seq} is run ${r.runId}`);
    }
    const sa = streams.alarms[subjectOf(c.key, 'alarms')] ?? 0;
    streamAlarms += sa;
    if (sa !== c.alarms.length) alarms.add(`${c.key}: ${sa} alarm messages in defense-events, ${c.alarms.length} alarms stored`);
    const sh = streams.holds[subjectOf(c.key, 'holds')] ?? 0;
    const held = c.committed.filter((r) => r.hold).length;
    streamHolds += sh;
    storedHolds += held;
    if (sh !== held) holds.add(`${c.key}: ${sh} hold messages in defense-events, ${held} runs stored with a hold`);
  }
  const dead = Object.entries(streams.deadLetters).filter(([, n]) => n > 0);
  const deadTotal = dead.reduce((a, [, n]) => a + n, 0);
  const result = (id: string, title: string, c: Collector, checked: string): InvariantResult => ({
    id,
    title,
    ok: c.count === 0,
    checked,
    violations: c.list,
    violationCount: c.count,
  });
  return [
    result('exactly-once', 'Every published run applied exactly once, in order (committed sequences == the stream\'s sequences)', once, `${published} runs published, ${committed} committed, ${chambers.length} chambers`),
    result('high-water-mark', 'High-water mark == last sequence in the stream, every chamber', hwm, `${chambers.length} chambers`),
    {
      ...result(
        'stream-matches-publisher',
        opts.natsCluster
          ? 'The notification stream holds exactly the acknowledged runs, each at its acknowledged sequence (NATS\'s durability on a cluster: reported, not failing the scenario)'
          : 'The notification stream holds exactly the acknowledged runs, each at its acknowledged sequence',
        stream,
        `${Object.values(streams.notifications).reduce((a, b) => a + b, 0)} notifications in dc-notifications`,
      ),
      ...(opts.natsCluster ? { blocking: false } : {}),
    },
    result('single-owner', 'Never two owners at once: committing epochs never decrease (by sequence and by commit time)', owner, `${committed} commits`),
    result('alarms-once', 'No alarm doubled: identities unique, on committed runs, stream count == stored alarms', alarms, `${storedAlarms} alarms stored, ${streamAlarms} in the stream`),
    result('holds-once', 'Each hold published once: stream count == runs stored with a hold', holds, `${storedHolds} holds stored, ${streamHolds} in the stream`),
    {
      id: 'no-dead-letters',
      title: 'No valid run dead-lettered',
      ok: deadTotal === 0,
      checked: `${deadTotal} dead letters${dead.length ? ` (${dead.map(([s, n]) => `${n} on ${s}`).join(', ')})` : ''}`,
      violations: streams.deadLetterDetails?.length ? [...streams.deadLetterDetails] : dead.map(([s, n]) => `${n} on ${s}`),
      violationCount: deadTotal,
    },
  ];
}

/** Consecutive pairs of `xs`. */
export function pairs<T>(xs: readonly T[]): [T, T][] {
  const out: [T, T][] = [];
  let prev: T | undefined;
  let first = true;
  for (const x of xs) {
    if (!first) out.push([prev as T, x]);
    prev = x;
    first = false;
  }
  return out;
}

/** Percentile (nearest rank) of `xs`; null when empty. */
export function percentile(xs: readonly number[], p: number): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? null;
}

/** Processing of one chamber's runs published in a time window. */
export interface GapStats {
  readonly chamber: string;
  /** Longest time (ms) the chamber had a run waiting without committing anything. */
  readonly maxStallMs: number;
  /** The run that ended that stall. */
  readonly stallEndedBy: number | null;
  /** Publication -> commit, ms. */
  readonly maxLatencyMs: number;
  readonly runs: number;
}

/**
 * Per chamber, over runs published in [from, to]: the largest processing gap, i.e. the longest
 * stretch during which a run was waiting (published, not yet committed) and the chamber committed
 * nothing — `commit_i - max(published_i, commit_{i-1})` — and the worst publication-to-commit latency.
 */
export function processingGaps(chambers: readonly ChamberEvidence[], from: number, to: number): GapStats[] {
  const out: GapStats[] = [];
  for (const c of chambers) {
    const commits = new Map(c.committed.map((r) => [r.seq, r]));
    const pubs = [...c.published].sort((a, b) => a.seq - b.seq);
    let prevCommit = Number.NEGATIVE_INFINITY;
    let maxStall = 0;
    let endedBy: number | null = null;
    let maxLat = 0;
    let runs = 0;
    for (const p of pubs) {
      const r = commits.get(p.seq);
      if (!r) continue;
      if (p.publishedAt >= from && p.publishedAt <= to) {
        runs++;
        const stall = r.committedAt - Math.max(p.publishedAt, prevCommit);
        if (stall > maxStall) {
          maxStall = stall;
          endedBy = p.seq;
        }
        maxLat = Math.max(maxLat, r.committedAt - p.publishedAt);
      }
      prevCommit = Math.max(prevCommit, r.committedAt);
    }
    out.push({ chamber: c.key, maxStallMs: maxStall, stallEndedBy: endedBy, maxLatencyMs: maxLat, runs });
  }
  return out.sort((a, b) => b.maxStallMs - a.maxStallMs);
}

/** Latencies (publication -> commit, ms) of runs published in [from, to]. */
export function latencies(chambers: readonly ChamberEvidence[], from: number, to: number): number[] {
  const out: number[] = [];
  for (const c of chambers) {
    const commits = new Map(c.committed.map((r) => [r.seq, r]));
    for (const p of c.published) {
      const r = commits.get(p.seq);
      if (r && p.publishedAt >= from && p.publishedAt <= to) out.push(r.committedAt - p.publishedAt);
    }
  }
  return out;
}

/** The last map seen before `t`. */
export function mapAt(maps: readonly MapRecord[], t: number): MapRecord | undefined {
  let m: MapRecord | undefined;
  for (const r of maps) if (r.seenAt <= t) m = r;
  return m;
}

export const chambersOf = (m: AssignmentMap, defenderId: string): string[] =>
  Object.entries(m.assignments)
    .filter(([, d]) => d === defenderId)
    .map(([k]) => k)
    .sort();

/** Chambers whose owner differs between two maps. */
export function movedChambers(a: AssignmentMap, b: AssignmentMap): string[] {
  return Object.keys(b.assignments)
    .filter((k) => a.assignments[k] !== b.assignments[k])
    .sort();
}

/** How the chambers of crashed defenders came back. */
export interface TakeoverAnalysis {
  /** The crash (kill or freeze) time. */
  readonly faultAt: number;
  readonly victims: readonly string[];
  /** The map that took the victims' chambers away (null: none seen). */
  readonly map: { version: number; trigger: string; seenAt: number } | null;
  /** Fault -> that map seen, ms ("detection"). */
  readonly detectionMs: number | null;
  readonly orphaned: readonly string[];
  readonly moved: readonly string[];
  /** Orphaned and moved weight, by the map's own weights (defenderInfo is per defender; weights come from the caller). */
  readonly orphanedWeight: number;
  readonly movedWeight: number;
  /** Per orphaned chamber: first commit by the new owner. */
  readonly resumes: readonly { chamber: string; firstCommitAt: number | null; waiting: boolean; newOwner: string | undefined }[];
  /** Fault -> every orphaned chamber with waiting work committing again, ms (max over those chambers). */
  readonly resumeMs: number | null;
  readonly resumeP50Ms: number | null;
  /** The first run processed by a new owner (any orphaned chamber). */
  readonly firstResumeAt: number | null;
}

/**
 * For victims `victims` (stable IDs) that failed at `faultAt`: the map that reassigned their chambers,
 * and when each of those chambers committed its first run under the new owner (an epoch of that
 * map or later). A chamber counts towards the resume time when a run was waiting for it when the
 * map was published (otherwise there was nothing to resume yet).
 */
export function analyseTakeover(
  maps: readonly MapRecord[],
  chambers: readonly ChamberEvidence[],
  victims: readonly string[],
  faultAt: number,
  weights: ReadonlyMap<string, number>,
): TakeoverAnalysis {
  const before = mapAt(maps, faultAt);
  const orphaned = before ? victims.flatMap((v) => chambersOf(before.map, v)).sort() : [];
  const after = maps.find((m) => m.seenAt > faultAt && victims.every((v) => !(v in m.map.defenderInfo)));
  const moved = before && after ? movedChambers(before.map, after.map) : [];
  const byKey = new Map(chambers.map((c) => [c.key, c]));
  const resumes = orphaned.map((k) => {
    const c = byKey.get(k);
    if (!c || !after) return { chamber: k, firstCommitAt: null, waiting: false, newOwner: undefined };
    const first = c.committed.find((r) => r.committedAt >= faultAt && mapVersionOfEpoch(r.epoch) >= after.map.version);
    const pub = first ? c.published.find((p) => p.seq === first.seq) : undefined;
    return {
      chamber: k,
      firstCommitAt: first?.committedAt ?? null,
      waiting: pub !== undefined && pub.publishedAt <= after.seenAt,
      newOwner: after.map.assignments[k],
    };
  });
  const waiting = resumes.flatMap((r) => (r.waiting && r.firstCommitAt !== null ? [r.firstCommitAt - faultAt] : []));
  const firsts = resumes.flatMap((r) => (r.firstCommitAt !== null ? [r.firstCommitAt] : []));
  const w = (ks: readonly string[]) => ks.reduce((a, k) => a + (weights.get(k) ?? 0), 0);
  return {
    faultAt,
    victims,
    map: after ? { version: after.map.version, trigger: after.map.trigger, seenAt: after.seenAt } : null,
    detectionMs: after ? after.seenAt - faultAt : null,
    orphaned,
    moved,
    orphanedWeight: w(orphaned),
    movedWeight: w(moved),
    resumes,
    resumeMs: waiting.length > 0 ? Math.max(...waiting) : null,
    resumeP50Ms: percentile(waiting, 50),
    firstResumeAt: firsts.length > 0 ? Math.min(...firsts) : null,
  };
}

/**
 * The takeover of a crash restricted to the orphans not in `keys` (e.g. those a second crash caught
 * on their new owner before they ran: they are measured from that crash instead).
 */
export function takeoverWithout(a: TakeoverAnalysis, keys: readonly string[]): TakeoverAnalysis {
  const drop = new Set(keys);
  const resumes = a.resumes.filter((r) => !drop.has(r.chamber));
  const waiting = resumes.flatMap((r) => (r.waiting && r.firstCommitAt !== null ? [r.firstCommitAt - a.faultAt] : []));
  const firsts = resumes.flatMap((r) => (r.firstCommitAt !== null ? [r.firstCommitAt] : []));
  return {
    ...a,
    resumes,
    resumeMs: waiting.length > 0 ? Math.max(...waiting) : null,
    resumeP50Ms: percentile(waiting, 50),
    firstResumeAt: firsts.length > 0 ? Math.min(...firsts) : null,
  };
}

/**
 * Runs published in [from, to] that took longer than `thresholdMs` from publication to commit,
 * grouped by the committing owner (the epoch's map names it) — where the time went.
 */
export function slowRuns(
  chambers: readonly ChamberEvidence[],
  maps: readonly MapRecord[],
  from: number,
  to: number,
  thresholdMs: number,
): { owner: string; mapVersion: number; runs: number; chambers: number; maxMs: number; firstPublishedAt: number; lastCommittedAt: number }[] {
  const groups = new Map<string, { owner: string; mapVersion: number; runs: number; chambers: Set<string>; maxMs: number; firstPublishedAt: number; lastCommittedAt: number }>();
  for (const c of chambers) {
    const commits = new Map(c.committed.map((r) => [r.seq, r]));
    for (const p of c.published) {
      const r = commits.get(p.seq);
      if (!r || p.publishedAt < from || p.publishedAt > to || r.committedAt - p.publishedAt <= thresholdMs) continue;
      const v = mapVersionOfEpoch(r.epoch);
      const owner = maps.find((m) => m.map.version === v)?.map.assignments[c.key] ?? '?';
      const key = `${owner}@${v}`;
      let g = groups.get(key);
      if (!g) {
        g = { owner, mapVersion: v, runs: 0, chambers: new Set(), maxMs: 0, firstPublishedAt: p.publishedAt, lastCommittedAt: r.committedAt };
        groups.set(key, g);
      }
      g.runs++;
      g.chambers.add(c.key);
      g.maxMs = Math.max(g.maxMs, r.committedAt - p.publishedAt);
      g.firstPublishedAt = Math.min(g.firstPublishedAt, p.publishedAt);
      g.lastCommittedAt = Math.max(g.lastCommittedAt, r.committedAt);
    }
  }
  return [...groups.values()].map((g) => ({ ...g, chambers: g.chambers.size })).sort((a, b) => b.maxMs - a.maxMs);
}

/**
 * Every accepted map has version + 1 and a token no lower than its predecessor's (guarantee 7),
 * checked on every head stored (also those a newer map superseded before the watcher read them).
 */
export function checkMapSequence(maps: readonly Pick<MapHeadRecord, 'revision' | 'version' | 'fencingToken'>[]): InvariantResult {
  const c = new Collector();
  for (const [a, b] of pairs(maps)) {
    const revision = b.revision;
    if (b.version !== a.version + 1) c.add(`revision ${revision}: version ${b.version} after ${a.version}`);
    if (BigInt(b.fencingToken) < BigInt(a.fencingToken)) c.add(`revision ${revision}: token ${b.fencingToken} below ${a.fencingToken} (a stale leader's map was accepted)`);
  }
  return {
    id: 'single-map-writer',
    title: 'Single writer of the map: versions +1, fencing tokens never lower',
    ok: c.count === 0,
    checked: `${maps.length} maps`,
    violations: c.list,
    violationCount: c.count,
  };
}
