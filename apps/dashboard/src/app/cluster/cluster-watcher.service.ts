import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Subject } from 'rxjs';
import { Kvm, type KV } from '@nats-io/kv';
import type { AssignmentMap } from '@defender/contracts';
import { ClusterKvService, HealthRegistry, NatsConnectionService } from '@defender/nest-common';
import { DashboardConfig } from '../config';
import { DASHBOARD_CONFIG } from '../tokens';
import { buildDefenders, parseLease, type ClusterSnapshot, type ControllerView, type LeaderView, type MapHistoryEntry, type SeenHeartbeat } from './cluster-view';
import { MAP_HISTORY, MapWatcher } from './map-watcher';
import { StreamWatcher } from './stream-watcher';

/**
 * Keeps the cluster view: heartbeats (read every refresh), the assignment map and its movement
 * history ({@link MapWatcher}), the notification stream ({@link StreamWatcher}), the election
 * record (who leads) and the controllers' status (trigger state). Publishes a snapshot every
 * REFRESH_SECONDS to `updates`.
 */
@Injectable()
export class ClusterWatcherService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ClusterWatcherService.name);
  readonly updates = new Subject<ClusterSnapshot>();
  private seen = new Map<string, SeenHeartbeat>();
  private leader: LeaderView | null = null;
  private controllers: ControllerView[] = [];
  private problems = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private electionKv: KV | undefined;
  private stopped = false;
  /** Aborted at shutdown: the map is not watched again. */
  private readonly stopping = new AbortController();
  private last: ClusterSnapshot | undefined;
  private readonly maps: MapWatcher;
  private readonly stream: StreamWatcher;

  constructor(
    @Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig,
    private readonly kv: ClusterKvService,
    private readonly nats: NatsConnectionService,
    private readonly health: HealthRegistry,
  ) {
    this.health.set('cluster-view', false, 'not read yet');
    const connection = () => this.nats.connection();
    const problem = (key: string, text: string | undefined) => this.problem(key, text);
    this.maps = new MapWatcher({
      connection,
      bucket: config.NATS_KV_ASSIGNMENTS,
      replicas: config.NATS_KV_REPLICAS,
      retryMs: Math.max(1000, config.REFRESH_SECONDS * 1000),
      problem,
    });
    const fab = config.LOCAL_FAB_CONTROL_URL;
    this.stream = new StreamWatcher({ connection, localFab: fab ? { url: fab, token: config.LOCAL_FAB_CONTROL_TOKEN } : undefined, problem, logger: this.logger });
  }

  onApplicationBootstrap(): void {
    void this.maps.run(this.stopping.signal);
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
    this.maps.stop();
    this.updates.complete();
  }

  /** The newest snapshot (computed now when none was made yet). */
  snapshot(): ClusterSnapshot {
    return this.last ?? this.build();
  }

  /** The current map (with assignments), or null. */
  currentMap(): AssignmentMap | null {
    return this.maps.map;
  }

  /** Every retained map version with its moves (oldest first). */
  mapHistory(): readonly MapHistoryEntry[] {
    return this.maps.history;
  }

  private problem(key: string, text: string | undefined): void {
    if (text === undefined) this.problems.delete(key);
    else if (this.problems.get(key) !== text) {
      this.problems.set(key, text);
      this.logger.warn({ msg: text, part: key });
    }
  }

  /** The notification stream's identity (its `created` time) at the last refresh; null while missing or unread. */
  notificationStreamId(): string | null {
    return this.stream.streamId;
  }

  private async refresh(): Promise<void> {
    await Promise.all([this.readHeartbeats(), this.readLeader(), this.readControllers(), this.stream.read(), this.maps.check()]);
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
    const m = this.maps.map;
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
      history: this.maps.history.slice(-MAP_HISTORY).reverse().map((h) => ({ ...h, moves: h.moves.slice(0, 50) })),
      localFab: this.config.LOCAL_FAB_CONTROL_URL !== undefined,
      problems: [...this.problems.values()],
      notes: this.stream.note ? [this.stream.note] : [],
    };
  }
}
