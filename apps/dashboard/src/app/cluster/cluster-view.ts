import type { AssignmentMap, Heartbeat } from '@defender/contracts';

/** A defender as the cluster view shows it. */
export interface DefenderView {
  readonly defenderId: string;
  readonly podName: string | null;
  /** Heartbeat state, or `MISSING` when its heartbeats stopped (3 intervals) / it is only in the map. */
  readonly state: string;
  readonly alive: boolean;
  /** Seconds since its heartbeat last changed (null: never seen). */
  readonly lastSeenSeconds: number | null;
  readonly mapVersionSeen: number | null;
  /** Chambers it runs now (heartbeat) and in-flight runs. */
  readonly load: Heartbeat['load'] | null;
  /** What the current map gives it. */
  readonly chambers: number;
  readonly weight: number;
  /** Its weight over the map's average (1 = exactly its share). */
  readonly weightVsAvg: number | null;
  readonly capacity: number;
  readonly inMap: boolean;
}

/** A heartbeat with when its revision last changed (ms on the local monotonic clock). */
export interface SeenHeartbeat {
  readonly heartbeat: Heartbeat;
  readonly revision: number;
  readonly changedAt: number;
}

/**
 * The defender list: every defender with a heartbeat entry or an assignment in the map, ordered by
 * stable-ID number. A defender is alive while its heartbeat changed within 3 of its intervals (the
 * controller's crash rule); the map's per-defender chambers and weight come with it.
 */
/** @param now the time of `changedAt`'s clock (monotonic ms). */
export function buildDefenders(heartbeats: readonly SeenHeartbeat[], map: AssignmentMap | null, now: number): DefenderView[] {
  const ids = new Set<string>([...heartbeats.map((h) => h.heartbeat.defenderId), ...Object.keys(map?.defenderInfo ?? {})]);
  const avg = map?.statistics.avgWeightPerDefender ?? 0;
  const out: DefenderView[] = [];
  for (const id of ids) {
    const hb = heartbeats.find((h) => h.heartbeat.defenderId === id);
    const info = map?.defenderInfo[id];
    const age = hb ? Math.max(0, (now - hb.changedAt) / 1000) : null;
    const alive = hb !== undefined && age !== null && age <= 3 * hb.heartbeat.intervalSeconds && hb.heartbeat.state !== 'SHUTDOWN';
    out.push({
      defenderId: id,
      podName: hb?.heartbeat.podName ?? null,
      state: hb ? (alive || hb.heartbeat.state === 'SHUTDOWN' ? hb.heartbeat.state : 'MISSING') : 'MISSING',
      alive,
      lastSeenSeconds: age === null ? null : Math.round(age * 10) / 10,
      mapVersionSeen: hb?.heartbeat.mapVersionSeen ?? null,
      load: hb?.heartbeat.load ?? null,
      chambers: info?.chambers ?? 0,
      weight: info?.weight ?? 0,
      weightVsAvg: info && avg > 0 ? info.weight / avg : null,
      capacity: info?.capacity ?? hb?.heartbeat.capacity ?? 1,
      inMap: info !== undefined,
    });
  }
  const num = (id: string) => Number(/(\d+)$/.exec(id)?.[1] ?? Number.MAX_SAFE_INTEGER);
  return out.sort((a, b) => num(a.defenderId) - num(b.defenderId) || a.defenderId.localeCompare(b.defenderId));
}

/** A chamber that changed owner between two maps. */
export interface Move {
  readonly chamber: string;
  readonly from: string | null;
  readonly to: string | null;
}

/** Owner changes from `prev` to `next` (chambers added: from null; removed: to null). */
export function diffMaps(prev: Pick<AssignmentMap, 'assignments'> | undefined, next: Pick<AssignmentMap, 'assignments'>): Move[] {
  const moves: Move[] = [];
  const before = prev?.assignments ?? {};
  for (const [chamber, to] of Object.entries(next.assignments)) {
    const from = before[chamber];
    if (from !== to) moves.push({ chamber, from: from ?? null, to });
  }
  for (const [chamber, from] of Object.entries(before)) if (!(chamber in next.assignments)) moves.push({ chamber, from, to: null });
  return moves.sort((a, b) => a.chamber.localeCompare(b.chamber));
}

/** One published map in the movement history. */
export interface MapHistoryEntry {
  readonly version: number;
  readonly revision: number;
  readonly timestamp: string;
  readonly trigger: AssignmentMap['trigger'];
  readonly state: AssignmentMap['state'];
  readonly controllerId: string;
  readonly fencingToken: string;
  readonly defenderCount: number;
  readonly chamberCount: number;
  readonly chambersMoved: number;
  readonly movedWeightFraction: number;
  readonly floorFraction: number;
  readonly maxOverAvg: number | null;
  /** Owner changes against the previous map the dashboard saw (at most 200 listed). */
  readonly moves: readonly Move[];
  readonly movesTotal: number;
}

export function historyEntry(prev: AssignmentMap | undefined, next: AssignmentMap, revision: number): MapHistoryEntry {
  const moves = prev ? diffMaps(prev, next) : [];
  const s = next.statistics;
  return {
    version: next.version,
    revision,
    timestamp: next.timestamp,
    trigger: next.trigger,
    state: next.state,
    controllerId: next.controllerId,
    fencingToken: next.fencingToken,
    defenderCount: next.defenderCount,
    chamberCount: next.chamberCount,
    chambersMoved: s.chambersMoved,
    movedWeightFraction: s.movedWeightFraction,
    floorFraction: s.floorFraction,
    maxOverAvg: s.avgWeightPerDefender > 0 ? s.maxWeightPerDefender / s.avgWeightPerDefender : null,
    moves: moves.slice(0, 200),
    movesTotal: moves.length,
  };
}

/** The controllers' leader as the election record tells it. */
export interface LeaderView {
  readonly holder: string;
  readonly epoch: string;
  readonly leaseExpiresAt: string;
  /** The lease is current (not released, not expired). */
  readonly valid: boolean;
}

/** Reads the election-agent's KV record (`{ v, holder, token, leaseExpiresAtMs, released, ... }`); null if unreadable. */
export function parseLease(text: string, now: number): LeaderView | null {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof SyntaxError) return null;
    throw err;
  }
  if (typeof r !== 'object' || r === null || typeof r['holder'] !== 'string') return null;
  const expires = Number(r['leaseExpiresAtMs']);
  if (!Number.isFinite(expires)) return null;
  return {
    holder: r['holder'],
    epoch: String(r['token'] ?? ''),
    leaseExpiresAt: new Date(expires).toISOString(),
    valid: r['released'] !== true && expires > now,
  };
}

/** A controller replica as its /api/v1/status answers. */
export interface ControllerView {
  readonly url: string;
  readonly reachable: boolean;
  readonly controllerId: string | null;
  readonly isLeader: boolean;
  readonly clusterState: string | null;
  readonly lifecycle: string | null;
  readonly lastDecision: string | null;
  readonly pendingTrigger: { trigger: string; deadline: string; changes?: unknown } | null;
  readonly activeDefenders: number | null;
  readonly assignmentVersion: number | null;
  /**
   * What the map's weights are, as the controller balances (ASSIGNMENT_BALANCE_BY): `load`, expected
   * CPU µs per hour (ADR 0008), or `samples`, samples per run; null when it does not say.
   */
  readonly balanceBy: 'load' | 'samples' | null;
  readonly error?: string;
}

/** The whole cluster view (GET /api/v1/cluster and the `cluster` server-sent event). */
export interface ClusterSnapshot {
  readonly at: string;
  readonly leader: LeaderView | null;
  readonly controllers: readonly ControllerView[];
  readonly defenders: readonly DefenderView[];
  readonly map: Omit<AssignmentMap, 'assignments' | 'lastMovedAt' | 'defenderInfo'> | null;
  readonly history: readonly MapHistoryEntry[];
  readonly localFab: boolean;
  readonly problems: readonly string[];
  /** Quiet history lines: what happened and is over (e.g. the notification stream recreated, its chambers re-based). */
  readonly notes: readonly string[];
}
