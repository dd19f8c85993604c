import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sleepUnlessAborted } from '@defender/backoff';
import type { AssignmentMap } from '@defender/contracts';
import { ElectionClient, electionClientOptionsFromEnv, LeaderElection, LeadershipTerm } from '@defender/election';
import { ClusterKvService, StoreService } from '@defender/nest-common';
import { ControllerSettings } from '../controller-env';
import { CONTROLLER_SETTINGS } from '../tokens';
import type { ControllerEngine } from '../engine/controller-engine';
import { LeadershipMetricsObserver, type LeadershipObserver } from './leadership-metrics-observer';
import { type ElectionPort, LeadershipOrchestrator } from './leadership-orchestrator';

/** Exit code when the controller cannot go on (Kubernetes restarts it). */
export const EXIT_CONTROLLER_FAILED = 5;


/**
 * The Nest shell of {@link LeadershipOrchestrator}: gives it the cluster's buckets, the store, an
 * election over the agents, the metrics observer, real clocks and timers; campaigns once the app
 * has booted and steps down before it shuts down.
 */
@Injectable()
export class LeadershipService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(LeadershipService.name);
  readonly controllerId: string;
  /**
   * What the map's weights are (ASSIGNMENT_BALANCE_BY): `load`, expected CPU µs per hour under the
   * load model (ADR 0008), or `samples`, samples per run.
   */
  readonly balanceBy: ControllerSettings['ASSIGNMENT_BALANCE_BY'];
  private readonly leadership: LeadershipOrchestrator;
  private stopping = false;

  constructor(
    @Inject(CONTROLLER_SETTINGS) config: ControllerSettings,
    kv: ClusterKvService,
    store: StoreService,
    @Inject(LeadershipMetricsObserver) observer: LeadershipObserver,
  ) {
    const controllerId = config.POD_NAME ?? `${hostname()}:${process.pid}`;
    this.controllerId = controllerId;
    this.balanceBy = config.ASSIGNMENT_BALANCE_BY;
    this.leadership = new LeadershipOrchestrator({
      settings: config,
      controllerId,
      buckets: () => kv.buckets(),
      recreateMissingBuckets: () => kv.recreateMissing(),
      chamberMetadata: async () => (await store.ready()).chamberMetadata,
      election: (hooks): ElectionPort => {
        const client = new ElectionClient(electionClientOptionsFromEnv(config, { protoRoots: [join(__dirname, 'proto')] }));
        const election = new LeaderElection({
          transport: client,
          election: config.ELECTION_NAME,
          candidate: controllerId,
          ttlMs: config.ELECTION_TTL_SECONDS * 1000,
          ...hooks,
        });
        return {
          start: () => election.start(),
          stop: async () => {
            await election.stop();
            client.close();
          },
          isLeader: () => election.isLeader(),
          currentTerm: () => election.currentTerm(),
        };
      },
      observer,
      logger: this.logger,
      now: Date.now,
      monotonic: () => performance.now(),
      sleep: sleepUnlessAborted,
      every: (ms, fn) => {
        const t = setInterval(fn, ms);
        t.unref();
        return () => clearInterval(t);
      },
      fatal: (msg, err) => this.fatal(msg, err),
    });
  }

  /** The engine of the current term, if leader. */
  get current(): { term: LeadershipTerm; engine: ControllerEngine } | undefined {
    return this.leadership.current;
  }
  get isLeader(): boolean {
    return this.leadership.isLeader;
  }
  /** The last map this process published (for /api/v1/assignments on a leader). */
  get publishedMap(): AssignmentMap | undefined {
    return this.leadership.publishedMap;
  }

  onApplicationBootstrap(): void {
    void this.leadership.start().catch((err: unknown) => this.fatal('could not start campaigning', err));
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    // Steps down and releases the lease so a standby takes over at once.
    await this.leadership.stop();
  }

  private fatal(msg: string, err: unknown): void {
    if (this.stopping) return;
    this.logger.fatal({ msg, err: err instanceof Error ? err.message : String(err) });
    setImmediate(() => process.exit(EXIT_CONTROLLER_FAILED));
  }
}
