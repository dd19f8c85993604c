import { Inject, Injectable } from '@nestjs/common';
import type { KV } from '@nats-io/kv';
import { AssignmentMapBucket, BUCKET_VALUE_LIMITS, BucketOptions, HeartbeatBucket, openBucket, recreateBucketIfMissing } from '@defender/nats-kv';
import { NatsConnectionService } from '../nats/nats-connection.service';

export const CLUSTER_KV_OPTIONS = Symbol('CLUSTER_KV_OPTIONS');

export type ClusterBucketRole = 'stableIds' | 'heartbeats' | 'assignments';

export interface ClusterKvOptions {
  stableIds: string;
  heartbeats: string;
  assignments: string;
  replicas: number;
  /** The buckets this app writes: it sets their value limit on buckets an older version created. */
  writes?: readonly ClusterBucketRole[];
}

export interface ClusterBuckets {
  readonly stableIds: KV;
  readonly stableIdsName: string;
  readonly heartbeats: HeartbeatBucket;
  readonly assignments: AssignmentMapBucket;
}

/**
 * Opens the cluster's KV buckets once the NATS connection is up (creating them if missing) and
 * hands out the typed clients. Callers await {@link buckets}; a failure is retried on the next call.
 */
@Injectable()
export class ClusterKvService {
  private opening: Promise<ClusterBuckets> | undefined;

  constructor(
    private readonly nats: NatsConnectionService,
    @Inject(CLUSTER_KV_OPTIONS) private readonly opts: ClusterKvOptions,
  ) {}

  buckets(): Promise<ClusterBuckets> {
    this.opening ??= this.open().catch((err: unknown) => {
      this.opening = undefined;
      throw err;
    });
    return this.opening;
  }

  /**
   * Creates again the buckets NATS lost (restarted with an empty store); the handles of
   * {@link buckets} work again once they exist. Returns the names it created.
   */
  async recreateMissing(): Promise<string[]> {
    const nc = await this.nats.connection();
    const created: string[] = [];
    for (const [name, opts] of this.bucketSpecs()) {
      if (await recreateBucketIfMissing(nc, name, opts)) created.push(name);
    }
    return created;
  }

  /** Each bucket with its history and its value limit (server-side, BUCKET_VALUE_LIMITS). */
  private bucketSpecs(): [string, BucketOptions][] {
    const spec = (role: ClusterBucketRole, history: number): [string, BucketOptions] => [
      this.opts[role],
      { replicas: this.opts.replicas, history, maxValueBytes: BUCKET_VALUE_LIMITS[role], applyLimit: this.opts.writes?.includes(role) ?? false },
    ];
    return [spec('stableIds', 1), spec('heartbeats', 1), spec('assignments', 5)];
  }

  private async open(): Promise<ClusterBuckets> {
    const nc = await this.nats.connection();
    const [stableIds, heartbeats, assignments] = await Promise.all(this.bucketSpecs().map(([name, opts]) => openBucket(nc, name, opts)));
    if (!stableIds || !heartbeats || !assignments) throw new Error('three buckets expected');
    return {
      stableIds,
      stableIdsName: this.opts.stableIds,
      heartbeats: new HeartbeatBucket(heartbeats, this.opts.heartbeats),
      assignments: new AssignmentMapBucket(assignments, this.opts.assignments),
    };
  }
}
