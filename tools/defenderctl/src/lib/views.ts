import type { AssignmentMap, ChamberMemoryRecord, Heartbeat, MonitorModelRecord, MonitorStateRecord } from '@defender/contracts';
import { monitorModelOf, monitorModelSummary } from '@defender/pipeline';

/** What the map's weights are: `load` (expected CPU µs per hour, ADR 0008) or `samples` (samples per run); null when no controller says. */
export type MapWeightUnit = 'load' | 'samples' | null;

/** The map's weight unit as the leading (else any reachable) controller reports it. */
export function mapWeightUnit(controllers: StatusView['controllers']): MapWeightUnit {
  const k = controllers.find((c) => c.reachable && c.isLeader && c.balanceBy) ?? controllers.find((c) => c.reachable && c.balanceBy);
  return k?.balanceBy ?? null;
}

/** What `defenderctl status` reports. */
export interface StatusView {
  readonly leader: { holder: string; epoch: string; leaseExpiresAt: string; valid: boolean } | null;
  readonly controllers: readonly {
    url: string;
    reachable: boolean;
    controllerId?: string | null;
    isLeader?: boolean;
    clusterState?: string | null;
    lifecycle?: string | null;
    pendingTrigger?: { trigger: string; deadline: string } | null;
    /** What the map's weights are (ASSIGNMENT_BALANCE_BY): expected CPU µs per hour (`load`) or samples per run; null when it does not say. */
    balanceBy?: MapWeightUnit;
    error?: string;
  }[];
  readonly map: {
    version: number;
    timestamp: string;
    trigger: string;
    state: string;
    lifecycleState: string;
    controllerId: string;
    fencingToken: string;
    defenderCount: number;
    chamberCount: number;
    maxOverAvg: number | null;
    movedWeightFraction: number;
    floorFraction: number;
  } | null;
  readonly defenders: readonly DefenderRow[];
  /** Defender's streams: identity (creation time), messages, last sequence; `exists: false` when NATS lost it. */
  readonly streams: readonly { name: string; exists: boolean; created?: string; messages?: number; lastSequence?: number }[];
  /** With a store: the map's chambers whose mark counts in another notification stream (paused; ADR 0007). */
  readonly marks: { checked: number; onOtherStream: readonly string[]; unbound: number } | null;
  /** Missing buckets or streams, paused chambers: what is wrong and what recovers it. */
  readonly problems: readonly string[];
}

export interface DefenderRow {
  readonly defenderId: string;
  readonly podName: string | null;
  readonly state: string;
  readonly alive: boolean;
  readonly heartbeatAgeSeconds: number | null;
  readonly chambers: number;
  readonly weight: number;
  readonly weightVsAvg: number | null;
  readonly processedTotal: number | null;
  readonly inflight: number | null;
  readonly mapVersionSeen: number | null;
}

/** A heartbeat with the NATS server's time of its last write. */
export interface HeartbeatAt {
  readonly heartbeat: Heartbeat;
  readonly storedAt: Date;
}

const idNum = (id: string) => Number(/(\d+)$/.exec(id)?.[1] ?? Number.MAX_SAFE_INTEGER);

/** Defenders from heartbeats and the map (alive: heartbeat written within 3 intervals). */
export function defenderRows(heartbeats: readonly HeartbeatAt[], map: AssignmentMap | null, now: number): DefenderRow[] {
  const ids = new Set([...heartbeats.map((h) => h.heartbeat.defenderId), ...Object.keys(map?.defenderInfo ?? {})]);
  const avg = map?.statistics.avgWeightPerDefender ?? 0;
  return [...ids]
    .map((id) => {
      const hb = heartbeats.find((h) => h.heartbeat.defenderId === id);
      const info = map?.defenderInfo[id];
      const age = hb ? Math.max(0, (now - hb.storedAt.getTime()) / 1000) : null;
      const alive = hb !== undefined && age !== null && age <= 3 * hb.heartbeat.intervalSeconds && hb.heartbeat.state !== 'SHUTDOWN';
      return {
        defenderId: id,
        podName: hb?.heartbeat.podName ?? null,
        state: hb ? (alive || hb.heartbeat.state === 'SHUTDOWN' ? hb.heartbeat.state : 'MISSING') : 'MISSING',
        alive,
        heartbeatAgeSeconds: age === null ? null : Math.round(age * 10) / 10,
        chambers: info?.chambers ?? 0,
        weight: info?.weight ?? 0,
        weightVsAvg: info && avg > 0 ? info.weight / avg : null,
        processedTotal: hb?.heartbeat.load.processedTotal ?? null,
        inflight: hb?.heartbeat.load.inflight ?? null,
        mapVersionSeen: hb?.heartbeat.mapVersionSeen ?? null,
      };
    })
    .sort((a, b) => idNum(a.defenderId) - idNum(b.defenderId));
}

export function mapSummary(m: AssignmentMap | null): StatusView['map'] {
  if (!m) return null;
  const s = m.statistics;
  return {
    version: m.version,
    timestamp: m.timestamp,
    trigger: m.trigger,
    state: m.state,
    lifecycleState: m.lifecycleState,
    controllerId: m.controllerId,
    fencingToken: m.fencingToken,
    defenderCount: m.defenderCount,
    chamberCount: m.chamberCount,
    maxOverAvg: s.avgWeightPerDefender > 0 ? s.maxWeightPerDefender / s.avgWeightPerDefender : null,
    movedWeightFraction: s.movedWeightFraction,
    floorFraction: s.floorFraction,
  };
}

/** `2`, `defender-2` -> `defender-2`; undefined for anything else. */
export function normalizeDefender(ref: string): string | undefined {
  if (/^\d{1,6}$/.test(ref)) return `defender-${Number(ref)}`;
  return /^defender-(0|[1-9]\d{0,5})$/.test(ref) ? ref : undefined;
}

/** One chamber's owner and weight (`assignments`). */
export interface AssignmentRow {
  readonly chamber: string;
  readonly owner: string;
  readonly weight: number | null;
  readonly lastMovedAt: string | null;
}

export function assignmentRows(m: AssignmentMap, weights: ReadonlyMap<string, number>, defender?: string): AssignmentRow[] {
  return Object.entries(m.assignments)
    .filter(([, owner]) => !defender || owner === defender)
    .map(([chamber, owner]) => {
      const moved = m.lastMovedAt[chamber];
      return { chamber, owner, weight: weights.get(chamber) ?? null, lastMovedAt: moved !== undefined ? new Date(moved).toISOString() : null };
    })
    .sort((a, b) => idNum(a.owner) - idNum(b.owner) || a.chamber.localeCompare(b.chamber));
}

/** One owner change of a chamber found in the map history. */
export interface OwnerChange {
  readonly version: number;
  readonly timestamp: string;
  readonly trigger: string;
  readonly from: string | null;
  readonly to: string | null;
}

/** What `explain` reports about a chamber. */
export interface Explanation {
  readonly chamber: string;
  readonly owner: string | null;
  readonly mapVersion: number | null;
  readonly weight: number | null;
  readonly weightSource: string | null;
  /** The owner's share of the map: `weight` in the map's unit (`weightUnit`), not the chamber's samples per run. */
  readonly ownerLoad: { chambers: number; weight: number; weightUnit: MapWeightUnit; weightVsAvg: number | null; alive: boolean | null } | null;
  readonly lastMovedAt: string | null;
  /** Owner changes in the map versions NATS keeps, oldest first. */
  readonly moves: readonly OwnerChange[];
  /** The oldest map version looked at. */
  readonly historyFrom: number | null;
  readonly reasons: readonly string[];
  /** The chamber monitor's state per recipe (the store's monitor state records); empty when the store is not reachable. */
  readonly monitor: readonly MonitorLine[];
  /** What the chamber remembers of its runs (the store's chamber memory record), in words; null when none is stored or the store is not reachable. */
  readonly memory: string | null;
}

/** One recipe's chamber monitor in `explain`. */
export interface MonitorLine {
  readonly recipe: string;
  readonly phase: 'collecting' | 'judging';
  readonly modelVersion: number;
  /** Phase I runs collected (collecting) or runs judged by the model version (judging). */
  readonly runs: number;
  readonly sequence: number;
  readonly runId: string;
  readonly text: string;
}

/** What a recipe's monitor state says, in words; with the model it judges with (its record), what that model is. */
export function monitorLine(r: MonitorStateRecord, model?: MonitorModelRecord): MonitorLine {
  const s = r.state;
  const runs = s.phase === 'collecting' ? s.runs : s.judgedRuns;
  const text =
    s.phase === 'collecting'
      ? `recipe ${r.recipe}: Phase I, ${runs} run(s) collected for model v${s.modelVersion} (state of run ${r.runId}, sequence ${r.sequence})`
      : `recipe ${r.recipe}: judged by model v${s.modelVersion}, ${runs} run(s) judged by it; the centre follows ${Object.keys(s.levelOffsets).length} SVID level(s)${s.mewma ? `, MEWMA on ${s.mewma.length} component(s)` : ''} (state of run ${r.runId}, sequence ${r.sequence})${model && model.version === s.modelVersion ? `; ${modelWords(model)}` : ''}`;
  return { recipe: r.recipe, phase: s.phase, modelVersion: s.modelVersion, runs, sequence: r.sequence, runId: r.runId, text };
}

/** A model record in words: why and when it was fitted, on how many runs, its charts' limits. */
export function modelWords(m: MonitorModelRecord): string {
  const model = monitorModelOf(m);
  const head = `model v${m.version} ${m.reason} by run ${m.runId} (sequence ${m.sequence})`;
  if (typeof model === 'string') return `${head}, unreadable: ${model}`;
  const s = monitorModelSummary(model);
  const limits = [s.t2 !== null ? `T² limit ${s.t2.toPrecision(4)}` : null, s.spe !== null ? `SPE limit ${s.spe.toPrecision(4)}` : null, s.components !== null ? `${s.components} component(s)` : null]
    .filter((x) => x !== null)
    .join(', ');
  return `${head} on ${s.baselineRuns} Phase I run(s): ${s.charted} indicator(s) charted${limits ? `, ${limits}` : ''}`;
}

/** What a chamber's memory record says, in words: its runs' alarms as the escalation rules count them. */
export function memoryLine(r: ChamberMemoryRecord): string {
  const flags = r.memory.recentAlarms;
  const newest = flags.slice(-5);
  const alarmed = newest.filter(Boolean).length;
  const span = r.memory.fromFirstRun ? 'every judged run since its first' : `its newest ${flags.length} judged run(s)`;
  return `remembers the alarms of ${span} (${flags.length}): ${alarmed} of the newest ${newest.length} alarmed, ${flags.map((a) => (a ? '1' : '0')).join('') || '-'} oldest first (memory of run ${r.runId}, sequence ${r.sequence})`;
}

const TRIGGER_WHY: Readonly<Record<string, string>> = {
  cold_start: 'the cluster cold-started: every chamber was placed by weight, heaviest first',
  crash: 'its previous owner stopped heartbeating (3 missed intervals) and its chambers were handed to the others',
  planned_scale: 'defenders joined or left gracefully and the controller rebalanced towards the new average',
  restart: 'the whole cluster restarted and the map was rebuilt',
  takeover: 'a new controller leader took over and re-published the map',
  chambers_changed: 'the chamber list in chamber_metadata changed',
  load_drift: 'a defender stayed outside the load band (measured CPU load) for the sustained time and the controller rebalanced',
  post_crash: 'after a crash the cluster was stable again and one balance pass restored the band the orphans-only placement had left',
};

/**
 * Explains a chamber's placement from the map history (oldest first): who owns it, how heavy it
 * is, how loaded its owner is against the average, and each owner change NATS still remembers with
 * the trigger that caused it.
 */
export function explain(
  chamber: string,
  history: readonly AssignmentMap[],
  opts: {
    weight?: { value: number; source: string } | undefined;
    alive?: ReadonlyMap<string, boolean>;
    strategy?: string;
    tolerance?: number;
    monitor?: readonly MonitorStateRecord[];
    /** The model record each judging state names (`MonitorModelRepository.get`), to say what it is. */
    models?: readonly MonitorModelRecord[];
    memory?: ChamberMemoryRecord | undefined;
    /** What the map's weights are (the controllers' `balanceBy`). */
    weightUnit?: MapWeightUnit;
  } = {},
): Explanation {
  const current = history[history.length - 1] ?? null;
  const owner = current?.assignments[chamber] ?? null;
  const moves: OwnerChange[] = [];
  let prev: string | null | undefined;
  for (const m of history) {
    const o = m.assignments[chamber] ?? null;
    if (prev !== undefined && o !== prev) moves.push({ version: m.version, timestamp: m.timestamp, trigger: m.trigger, from: prev, to: o });
    if (prev === undefined && m === history[0] && m.version === 1 && o !== null) moves.push({ version: 1, timestamp: m.timestamp, trigger: m.trigger, from: null, to: o });
    prev = o;
  }
  const info = owner ? current?.defenderInfo[owner] : undefined;
  const avg = current?.statistics.avgWeightPerDefender ?? 0;
  const ownerLoad =
    info && owner ? { chambers: info.chambers, weight: info.weight, weightUnit: opts.weightUnit ?? null, weightVsAvg: avg > 0 ? info.weight / avg : null, alive: opts.alive?.get(owner) ?? null } : null;
  const moved = current?.lastMovedAt[chamber];
  const lastMovedAt = moved !== undefined ? new Date(moved).toISOString() : null;
  const reasons: string[] = [];
  if (!current) reasons.push('no assignment map has been published yet');
  else if (!owner) reasons.push(`${chamber} is not in map v${current.version}: it is not in chamber_metadata (its notifications are dead-lettered as unknown-chamber)`);
  else {
    const last = moves[moves.length - 1];
    if (last && last.to === owner) {
      reasons.push(`it came to ${owner} with map v${last.version} (${last.trigger}${last.from ? `, from ${last.from}` : ''}): ${TRIGGER_WHY[last.trigger] ?? last.trigger}`);
    } else {
      reasons.push(`${owner} has owned it since before map v${history[0]?.version ?? current.version} (the oldest version NATS keeps)${lastMovedAt ? `; its last move was at ${lastMovedAt}` : ''}`);
    }
    const tol = opts.tolerance ?? 0.05;
    const strategy = opts.strategy ?? 'sticky-balanced';
    if (ownerLoad?.weightVsAvg !== null && ownerLoad?.weightVsAvg !== undefined) {
      const r = ownerLoad.weightVsAvg;
      reasons.push(
        `it stays: the ${strategy} assignment moves a chamber only when its owner leaves or is outside (1 ± ${tol}) × its share; ${owner} carries ${r.toFixed(3)} × the average weight${Math.abs(r - 1) <= tol ? ' (inside the band)' : ' (outside the band: a chamber the size of this one may be the smallest step, or a rebalance is pending)'}`,
      );
    }
    if (ownerLoad?.alive === false) reasons.push(`${owner} is not heartbeating: the controller will move its chambers once 3 intervals have passed`);
  }
  return {
    chamber,
    owner,
    mapVersion: current?.version ?? null,
    weight: opts.weight?.value ?? null,
    weightSource: opts.weight?.source ?? null,
    ownerLoad,
    lastMovedAt,
    moves,
    historyFrom: history[0]?.version ?? null,
    reasons,
    monitor: (opts.monitor ?? []).map((r) => monitorLine(r, opts.models?.find((m) => m.recipe === r.recipe && m.version === r.state.modelVersion))),
    memory: opts.memory ? memoryLine(opts.memory) : null,
  };
}
