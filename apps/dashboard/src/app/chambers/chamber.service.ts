import { Inject, Injectable } from '@nestjs/common';
import { chamberKey, parseChamberKey, type AlarmRecord, type ChamberMetadata, type ChamberRef, type DefenderStore, type LimitSetRecord, type RunPointSet } from '@defender/contracts';
import { MONITOR_CHART_TYPE } from '@defender/pipeline';
import { StoreService } from '@defender/nest-common';
import { DashboardConfig } from '../config';
import { DASHBOARD_CONFIG } from '../tokens';
import { ClusterWatcherService } from '../cluster/cluster-watcher.service';
import { AlarmFeedService } from '../alarms/alarm-feed.service';
import { runAlarmOf, type RunAlarmView } from '../alarms/run-alarm';
import { buildCharts, buildMonitors, monitorModelKeys, type ChartView, type MonitorView } from './chamber-view';
import { MODEL_SUFFIX } from './monitor-keys';

/** A chamber in the chamber list. */
export interface ChamberListItem {
  readonly key: string;
  readonly owner: string | null;
  readonly weight: number | null;
  /** Alarms of the chamber in the dashboard's recent feed. */
  readonly recentAlarms: number;
  readonly lastMovedAt: string | null;
}

export interface ChamberDetail {
  readonly key: string;
  readonly toolId: string;
  readonly chamberId: string;
  readonly owner: string | null;
  readonly lastMovedAt: string | null;
  readonly metadata: (Omit<ChamberMetadata, 'lastUpdated'> & { lastUpdated: string }) | null;
  readonly state: {
    ownerEpoch: number;
    ownerId: string;
    highWaterMark: number;
    updatedAt: string;
    /**
     * The notification stream the mark counts in (ADR 0007): `mismatch` while it is not the stream
     * NATS holds now (the owner pauses the chamber and re-bases it), `unbound` before an owner bound
     * it, `unknown` while the stream cannot be read.
     */
    stream: { id: string | null; offset: number; status: 'bound' | 'unbound' | 'mismatch' | 'unknown' };
  } | null;
  readonly hold: { holdId: string; ruleId: string; reason: string; runId: string; sequence: number; heldAt: string } | null;
  /**
   * What the chamber remembers of its runs (the store's chamber memory record): whether each of its
   * newest judged runs alarmed, oldest first, as the escalation rules count them; null before its first.
   */
  readonly memory: { recentAlarms: boolean[]; fromFirstRun: boolean; sequence: number; runId: string; committedAt: string } | null;
  readonly runs: number;
  /** The chamber monitor of each recipe that has one (T², SPE over the runs, the model's limits). */
  /**
   * The chamber's newest equipment events (the store's, ADR 0019), newest first: the charts mark them
   * between the runs they came between (by store sequence).
   */
  readonly events: readonly { sequence: number; eventId: string; kind: string; at: string; note?: string; author?: string; recipe?: string; parts?: string[] }[];
  readonly monitors: readonly MonitorView[];
  readonly charts: readonly ChartView[];
  readonly hiddenConstantCharts: number;
  /** Chamber-monitor indicators not in `charts`: without a violation in these runs (judged together in `monitors`), or beyond the 12 violated last. */
  readonly hiddenMonitoredCharts: number;
  /** Newest first; a run-level alarm of the chamber monitor carries `run` (its violations and contributors). */
  readonly alarms: readonly (Omit<AlarmRecord, 'raisedAt'> & { raisedAt: string; run?: RunAlarmView })[];
}

/** Whether a chamber's mark counts in the notification stream NATS holds now (`current`, null: unread or missing). */
export function streamStatusOf(recorded: string | undefined, current: string | null): 'bound' | 'unbound' | 'mismatch' | 'unknown' {
  if (recorded === undefined) return 'unbound';
  if (current === null) return 'unknown';
  return recorded === current ? 'bound' : 'mismatch';
}

/** Thrown for a malformed chamber key (HTTP 400 at the edge). */
export class InvalidChamberKeyError extends Error {
  override readonly name = 'InvalidChamberKeyError';
}

const METADATA_TTL_MS = 10_000;
/** Charts of chamber-monitor indicators on a chamber's page (those violated last); `all` lists every one. */
const MONITORED_CHARTS = 12;
/** Equipment events marked on the charts: the newest (a chamber sees a few a week). */
const EVENTS_SHOWN = 100;

/** Reads a chamber's U-charts, limits, alarms and state from the store (read-only). */
@Injectable()
export class ChamberService {
  private metadata: { at: number; rows: Map<string, ChamberMetadata> } | undefined;

  constructor(
    @Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig,
    private readonly store: StoreService,
    private readonly cluster: ClusterWatcherService,
    private readonly feed: AlarmFeedService,
  ) {}

  private async db(): Promise<DefenderStore> {
    return this.store.ready();
  }

  private async weights(): Promise<Map<string, ChamberMetadata>> {
    const now = Date.now();
    if (!this.metadata || now - this.metadata.at > METADATA_TTL_MS) {
      const rows = await (await this.db()).chamberMetadata.list();
      this.metadata = { at: now, rows: new Map(rows.map((r) => [chamberKey(r), r])) };
    }
    return this.metadata.rows;
  }

  /** Every chamber of the map or of chamber_metadata, most alarmed first, then by key. */
  async list(): Promise<ChamberListItem[]> {
    const map = this.cluster.currentMap();
    const meta = await this.weights();
    const counts = new Map<string, number>();
    for (const a of this.feed.recent(Number.MAX_SAFE_INTEGER)) if (a.kind === 'alarm') counts.set(a.chamber, (counts.get(a.chamber) ?? 0) + 1);
    const keys = new Set([...Object.keys(map?.assignments ?? {}), ...meta.keys()]);
    return [...keys]
      .map((key) => ({
        key,
        owner: map?.assignments[key] ?? null,
        weight: meta.get(key)?.weight ?? null,
        recentAlarms: counts.get(key) ?? 0,
        lastMovedAt: map?.lastMovedAt[key] ? new Date(map.lastMovedAt[key]).toISOString() : null,
      }))
      .sort((a, b) => b.recentAlarms - a.recentAlarms || a.key.localeCompare(b.key));
  }

  async detail(key: string, opts: { runs?: number; includeConstant?: boolean } = {}): Promise<ChamberDetail> {
    let ref;
    try {
      ref = parseChamberKey(key);
    } catch (err) {
      throw new InvalidChamberKeyError((err as Error).message, { cause: err });
    }
    const db = await this.db();
    const runs = Math.min(1000, Math.max(1, opts.runs ?? this.config.CHART_RUNS));
    const [history, limits, alarms, hold, state, metadata, monitorStates, memory, events] = await Promise.all([
      db.uchart.history(ref, { limit: runs }),
      db.uchart.currentLimitSets(ref),
      db.alarms.list(ref, { limit: 50 }),
      db.alarms.hold(ref),
      db.chamberState.get(ref),
      db.chamberMetadata.get(ref),
      db.monitorState.list(ref),
      db.chamberMemory.get(ref),
      db.chamberEvents.list(ref, { limit: EVENTS_SHOWN }),
    ]);
    const all = opts.includeConstant ?? false;
    const { charts, hiddenConstant, hiddenMonitored } = buildCharts(history, limits, { includeConstant: all, includeMonitored: all, maxMonitored: MONITORED_CHARTS });
    // Each recipe's newest model record: the recipes with a state, and those whose runs the history holds.
    const recipes = new Set([...monitorStates.map((s) => s.recipe), ...monitorModelKeys(history, limits).map((k) => k.slice(0, -MODEL_SUFFIX.length))]);
    const [withOlder, models] = await Promise.all([
      this.withMonitorModels(db, ref, history, limits),
      Promise.all([...recipes].map((recipe) => db.monitorModels.get(ref, recipe))),
    ]);
    const monitors = buildMonitors(history, withOlder, alarms, monitorStates, models.filter((m) => m !== undefined));
    const map = this.cluster.currentMap();
    const moved = map?.lastMovedAt[key];
    return {
      key,
      toolId: ref.toolId,
      chamberId: ref.chamberId,
      owner: map?.assignments[key] ?? null,
      lastMovedAt: moved ? new Date(moved).toISOString() : null,
      metadata: metadata ? { ...metadata, lastUpdated: metadata.lastUpdated.toISOString() } : null,
      state: state
        ? {
            ownerEpoch: state.ownerEpoch,
            ownerId: state.ownerId,
            highWaterMark: state.highWaterMark,
            updatedAt: state.updatedAt.toISOString(),
            stream: { id: state.streamId ?? null, offset: state.streamOffset ?? 0, status: streamStatusOf(state.streamId, this.cluster.notificationStreamId()) },
          }
        : null,
      hold: hold ? { holdId: hold.holdId, ruleId: hold.ruleId, reason: hold.reason, runId: hold.runId, sequence: hold.sequence, heldAt: hold.heldAt.toISOString() } : null,
      memory: memory
        ? { recentAlarms: [...memory.memory.recentAlarms], fromFirstRun: memory.memory.fromFirstRun, sequence: memory.sequence, runId: memory.runId, committedAt: memory.committedAt.toISOString() }
        : null,
      runs: history.length,
      events: events.map(({ sequence, event: e }) => ({
        sequence,
        eventId: e.eventId,
        kind: e.kind,
        at: e.at,
        ...(e.note !== undefined ? { note: e.note } : {}),
        ...(e.author !== undefined ? { author: e.author } : {}),
        ...(e.recipe !== undefined ? { recipe: e.recipe } : {}),
        ...(e.parts !== undefined ? { parts: [...e.parts] } : {}),
      })),
      monitors,
      charts,
      hiddenConstantCharts: hiddenConstant,
      hiddenMonitoredCharts: hiddenMonitored,
      alarms: alarms.map((a) => {
        const run = runAlarmOf(a.ruleId, a.details);
        return { ...a, raisedAt: a.raisedAt.toISOString(), ...(run ? { run } : {}) };
      }),
    };
  }

  /**
   * `limits` plus, for a monitor whose current limit set is a pending re-baseline, its earlier
   * versions: the model the runs so far were judged against stays on the charts during the new Phase I.
   */
  private async withMonitorModels(db: DefenderStore, ref: ChamberRef, history: readonly RunPointSet[], limits: readonly LimitSetRecord[]): Promise<LimitSetRecord[]> {
    const current = new Map(limits.map((l) => [l.indicatorKey, l]));
    const older = monitorModelKeys(history, limits).filter((key) => {
      const l = current.get(key);
      return l !== undefined && l.chartType !== MONITOR_CHART_TYPE;
    });
    const versions = await Promise.all(older.map((key) => db.uchart.limitSetHistory(ref, key)));
    return [...limits, ...versions.flat()];
  }
}
