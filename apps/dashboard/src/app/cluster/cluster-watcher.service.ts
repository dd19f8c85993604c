import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Subject } from 'rxjs';
import { Kvm, type KV } from '@nats-io/kv';
import { isNewerMap, type AssignmentMap } from '@defender/contracts';
import { jetstreamManager } from '@nats-io/jetstream';
import { AssignmentMapBucket, isStreamNotFound, openBucket, STREAMS } from '@defender/nats-kv';
import { supervise } from '@defender/backoff';
import { ClusterKvService, HealthRegistry, NatsConnectionService } from '@defender/nest-common';
import { DashboardConfig } from '../config';
import { DASHBOARD_CONFIG } from '../tokens';
import {
  buildDefenders,
  historyEntry,
  parseLease,
  type ClusterSnapshot,
  type ControllerView,
  type LeaderView,
  type MapHistoryEntry,
  type SeenHeartbeat,
} from './cluster-view';
import { parseStreamHealth, streamBanner, type DefenderStreamReport, type StreamRecreation } from './stream-banner';

const HISTORY = 30;

/**
 * Keeps the cluster view: heartbeats (read every refresh), the assignment map and its movement
 * history (KV watch, starting with the versions NATS keeps), the election record (who leads) and the
 * controllers' status (trigger state). Publishes a snapshot every REFRESH_SECONDS to `updates`.
 */
@Injectable()
export class ClusterWatcherService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ClusterWatcherService.name);
  readonly updates = new Subject<ClusterSnapshot>();
  private map: AssignmentMap | null = null;
  private history: MapHistoryEntry[] = [];
  private seen = new Map<string, SeenHeartbeat>();
  private leader: LeaderView | null = null;
  private controllers: ControllerView[] = [];
  private problems = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private stopWatch: (() => void) | undefined;
  private electionKv: KV | undefined;
  private stopped = false;
  /** Aborted at shutdown: the map is not watched again. */
  private readonly stopping = new AbortController();
  private last: ClusterSnapshot | undefined;
  private streamId: string | null = null;
  /** The last identity read (kept while the stream is missing, to tell a recreation). */
  private lastStreamId: string | null = null;
  /** The last recreation seen, and whether the defenders reported it over (then they are not asked again). */
  private recreation: StreamRecreation | null = null;
  private recreationOver = false;
  /** The stream banner's quiet history line (see stream-banner.ts). */
  private streamNote: string | undefined;
  /** The map bucket the watch reads, its stream's identity (`created`) then, and the newest revision delivered. */
  private mapKv: KV | undefined;
  private mapBucketCreated: string | undefined;
  private mapRevision = 0;
  /** NATS failed a read since the watch started: it may have lost its store (see {@link checkMapWatch}). */
  private watchSuspect = false;

  constructor(
    @Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig,
    private readonly kv: ClusterKvService,
    private readonly nats: NatsConnectionService,
    private readonly health: HealthRegistry,
  ) {
    this.health.set('cluster-view', false, 'not read yet');
  }

  onApplicationBootstrap(): void {
    void this.keepWatchingMap();
    const tick = () => {
      if (this.stopped) return;
      void this.refresh()
        .catch((err: unknown) => this.logger.warn({ msg: 'refresh failed', err: (err as Error).message }))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.config.REFRESH_SECONDS * 1000);
        });
    };
    tick();
  }

  beforeApplicationShutdown(): void {
    this.stopped = true;
    this.stopping.abort();
    if (this.timer) clearTimeout(this.timer);
    this.stopWatch?.();
    this.updates.complete();
  }

  /** The newest snapshot (computed now when none was made yet). */
  snapshot(): ClusterSnapshot {
    return this.last ?? this.build();
  }

  /** The current map (with assignments), or null. */
  currentMap(): AssignmentMap | null {
    return this.map;
  }

  /** Every retained map version with its moves (oldest first). */
  mapHistory(): readonly MapHistoryEntry[] {
    return this.history;
  }

  private problem(key: string, text: string | undefined): void {
    if (text === undefined) this.problems.delete(key);
    else if (this.problems.get(key) !== text) {
      this.problems.set(key, text);
      this.logger.warn({ msg: text, part: key });
    }
  }

  /**
   * Watches the map for the dashboard's life: while that fails (NATS down, or the bucket missing: this
   * read-only identity may not create it, issue 50), shows the problem and tries again every refresh
   * interval; a watch that ends (stopped by {@link checkMapWatch}, or by the server) is started again.
   */
  private async keepWatchingMap(): Promise<void> {
    const everyMs = Math.max(1000, this.config.REFRESH_SECONDS * 1000);
    await supervise(() => this.watchMap(), {
      baseMs: everyMs,
      maxMs: everyMs,
      random: Math.random,
      signal: this.stopping.signal,
      onFailure: (err) => this.problem('map', `cannot watch the assignment map: ${(err as Error).message}`),
    });
  }

  /**
   * A watch (an ordered consumer) resumes after the sequence it delivered last; if NATS lost its store
   * and the bucket was created again, its revisions restart at 1 and the watch would wait past every new
   * map while the defenders run on them (issue 52: the map panel stayed at v1 for minutes). So at each
   * refresh: a bucket created anew (its stream's `created` is not the one watched), or a read that
   * failed since the watch started, stops the watch (watched again at once, from the history NATS
   * keeps: newer maps are shown and enter the movement history), and the view says its map may be
   * behind until it has caught up with the bucket's head.
   */
  private async checkMapWatch(): Promise<void> {
    const kv = this.mapKv;
    if (!kv || !this.stopWatch) return;
    let created: string;
    let head: number;
    try {
      const status = await kv.status();
      created = status.streamInfo.created;
      head = status.streamInfo.state.last_seq;
    } catch (err) {
      this.watchSuspect = true;
      this.problem('map-watch', `cannot read the assignment map's bucket (${(err as Error).message}): the map shown may be behind`);
      return;
    }
    const recreated = created !== this.mapBucketCreated;
    if (!recreated && !this.watchSuspect) {
      // Caught up with the bucket (its last revision delivered, or only older entries after it).
      if (this.mapRevision > 0 || head === 0) this.problem('map-watch', undefined);
      return;
    }
    this.watchSuspect = false;
    const why = recreated ? `the assignment map's bucket was created again at ${created} (NATS lost its store?)` : 'NATS failed since the map watch started';
    this.problem('map-watch', `${why}: watching the map again; the map shown may be behind until a newer one arrives`);
    this.mapRevision = 0;
    this.stopWatch();
    this.stopWatch = undefined;
  }

  private async watchMap(): Promise<void> {
    const nc = await this.nats.connection();
    const kv = await openBucket(nc, this.config.NATS_KV_ASSIGNMENTS, { history: 5, replicas: this.config.NATS_KV_REPLICAS });
    const created = (await kv.status()).streamInfo.created;
    const w = await new AssignmentMapBucket(kv, this.config.NATS_KV_ASSIGNMENTS).watchPublications(
      {
        onMap: ({ map: m, revision }) => {
          this.mapRevision = Math.max(this.mapRevision, revision);
          // Like a defender: a deposed leader's late map (lower token) is not the current one.
          if (!isNewerMap(m, this.map ?? undefined)) return;
          this.history.push(historyEntry(this.map ?? undefined, m, revision));
          if (this.history.length > HISTORY) this.history.shift();
          this.map = m;
          this.problem('map', undefined);
          this.problem('map-watch', undefined);
        },
        onRejected: (revision, reason) => this.problem('map', `assignment map revision ${revision} not shown: ${reason}`),
      },
      { history: true },
    );
    this.mapKv = kv;
    this.mapBucketCreated = created;
    this.stopWatch = () => w.stop();
    await w.done;
  }

  /** The notification stream's identity (its `created` time) at the last refresh; null while missing or unread. */
  notificationStreamId(): string | null {
    return this.streamId;
  }

  /**
   * The notification stream: missing (NATS lost it; the defenders create it again) is a problem line;
   * recreated since an earlier refresh (chambers pause and re-base onto it, ADR 0007) is one until
   * the defenders report the re-base over, then a history line ({@link streamBanner}).
   */
  private async readStream(): Promise<void> {
    const name = STREAMS.notifications;
    try {
      const info = await (await jetstreamManager(await this.nats.connection())).streams.info(name);
      this.problem('stream', undefined);
      if (this.lastStreamId !== null && this.lastStreamId !== info.created) {
        this.recreation = { was: this.lastStreamId, now: info.created };
        this.recreationOver = false;
      }
      this.streamId = info.created;
      this.lastStreamId = info.created;
    } catch (err) {
      this.streamId = null;
      const missing = isStreamNotFound(err);
      this.problem('stream', missing ? `stream ${name} is missing (NATS lost its store?): the defenders create it again` : `cannot read stream ${name}: ${(err as Error).message}`);
    }
    if (!this.recreation || this.recreationOver) return;
    let banner;
    try {
      banner = streamBanner(name, this.recreation, await this.defenderStreamReports());
    } catch (err) {
      banner = { problem: `stream ${name} was recreated at ${this.recreation.now} (was ${this.recreation.was}): cannot ask the defenders whether their chambers re-based: ${(err as Error).message}` };
    }
    this.problem('stream-recreated', banner.problem);
    this.streamNote = banner.note;
    // Over as the defenders report it: they are not asked again until the next recreation.
    this.recreationOver = banner.problem === undefined;
  }

  /**
   * Each running defender's view of the notification stream (its `GET /api/v1/chambers`), or null
   * when the dashboard has no addresses for them: only the local fab's launcher lists them
   * (LOCAL_FAB_CONTROL_URL); in a cluster the defenders sit behind no per-pod address it knows.
   * @throws when the launcher does not list its processes.
   */
  private async defenderStreamReports(): Promise<DefenderStreamReport[] | null> {
    const base = this.config.LOCAL_FAB_CONTROL_URL;
    if (!base) return null;
    const res = await fetch(`${base}/control/processes`, { headers: { authorization: `Bearer ${this.config.LOCAL_FAB_CONTROL_TOKEN}` }, signal: AbortSignal.timeout(2000) });
    if (!res.ok) throw new Error(`the local fab's process list: HTTP ${res.status}`);
    const body = (await res.json()) as { processes?: unknown };
    const processes = Array.isArray(body.processes) ? (body.processes as Record<string, unknown>[]) : [];
    const defenders = processes.filter((p) => p['role'] === 'defender' && p['alive'] === true && typeof p['url'] === 'string');
    return Promise.all(
      defenders.map(async (p): Promise<DefenderStreamReport> => {
        const defender = typeof p['defenderId'] === 'string' ? p['defenderId'] : String(p['name']);
        try {
          const r = await fetch(`${p['url'] as string}/api/v1/chambers`, { signal: AbortSignal.timeout(900) });
          return { defender, health: r.ok ? parseStreamHealth(await r.json()) : null };
        } catch (err) {
          this.logger.debug({ msg: 'defender did not report its stream health', defender, err: (err as Error).message });
          return { defender, health: null };
        }
      }),
    );
  }

  private async refresh(): Promise<void> {
    await Promise.all([this.readHeartbeats(), this.readLeader(), this.readControllers(), this.readStream(), this.checkMapWatch()]);
    this.last = this.build();
    this.health.set('cluster-view', true);
    this.updates.next(this.last);
  }

  private async readHeartbeats(): Promise<void> {
    try {
      const { heartbeats, bad } = await (await this.kv.buckets()).heartbeats.readAll();
      const now = performance.now();
      // Only for a heartbeat seen for the first time (the dashboard just started): how old the
      // server says it is, as a display hint, never below 0.
      const wall = Date.now();
      const next = new Map<string, SeenHeartbeat>();
      for (const h of heartbeats) {
        const prev = this.seen.get(h.heartbeat.defenderId);
        // Liveness by when we saw the revision change, on the monotonic clock (the controller's
        // rule), never by KV expiry: a wall-clock step does not turn the view red.
        const changedAt = prev && prev.revision === h.revision ? prev.changedAt : prev ? now : now - Math.max(0, wall - h.storedAt.getTime());
        next.set(h.heartbeat.defenderId, { heartbeat: h.heartbeat, revision: h.revision, changedAt });
      }
      this.seen = next;
      this.problem('heartbeats', bad.length ? `${bad.length} unreadable heartbeat entries (${bad.map((b) => b.key).join(', ')})` : undefined);
    } catch (err) {
      this.problem('heartbeats', `cannot read heartbeats: ${(err as Error).message}`);
    }
  }

  private async readLeader(): Promise<void> {
    try {
      if (!this.electionKv) this.electionKv = await new Kvm(await this.nats.connection()).open(this.config.ELECTION_KV_BUCKET);
      const e = await this.electionKv.get(this.config.ELECTION_NAME);
      this.leader = e && e.operation === 'PUT' ? parseLease(e.string(), Date.now()) : null;
      this.problem('election', undefined);
    } catch (err) {
      this.electionKv = undefined;
      this.leader = null;
      this.problem('election', `cannot read the election record: ${(err as Error).message}`);
    }
  }

  private async readControllers(): Promise<void> {
    this.controllers = await Promise.all(
      this.config.CONTROLLER_URLS.map(async (url): Promise<ControllerView> => {
        try {
          const res = await fetch(`${url}/api/v1/status`, { signal: AbortSignal.timeout(900) });
          if (!res.ok) throw new Error(`HTTP ${res.status}`);
          const b = (await res.json()) as Record<string, unknown>;
          return {
            url,
            reachable: true,
            controllerId: typeof b['controllerId'] === 'string' ? b['controllerId'] : null,
            isLeader: b['isLeader'] === true,
            clusterState: (b['clusterState'] as string | null) ?? null,
            lifecycle: (b['lifecycle'] as string | null) ?? null,
            lastDecision: (b['lastDecision'] as string | null) ?? null,
            pendingTrigger: (b['pendingTrigger'] as ControllerView['pendingTrigger']) ?? null,
            activeDefenders: (b['activeDefenders'] as number | null) ?? null,
            assignmentVersion: (b['assignmentVersion'] as number | null) ?? null,
            balanceBy: b['balanceBy'] === 'load' || b['balanceBy'] === 'samples' ? b['balanceBy'] : null,
          };
        } catch (err) {
          return {
            url,
            reachable: false,
            controllerId: null,
            isLeader: false,
            clusterState: null,
            lifecycle: null,
            lastDecision: null,
            pendingTrigger: null,
            activeDefenders: null,
            assignmentVersion: null,
            balanceBy: null,
            error: (err as Error).message,
          };
        }
      }),
    );
  }

  private build(): ClusterSnapshot {
    const m = this.map;
    let mapView: ClusterSnapshot['map'] = null;
    if (m) {
      const { assignments: _a, lastMovedAt: _l, defenderInfo: _d, ...rest } = m;
      mapView = rest;
    }
    return {
      at: new Date().toISOString(),
      leader: this.leader,
      controllers: this.controllers,
      defenders: buildDefenders([...this.seen.values()], m, performance.now()),
      map: mapView,
      history: this.history.slice(-HISTORY).reverse().map((h) => ({ ...h, moves: h.moves.slice(0, 50) })),
      localFab: this.config.LOCAL_FAB_CONTROL_URL !== undefined,
      problems: [...this.problems.values()],
      notes: this.streamNote ? [this.streamNote] : [],
    };
  }
}
