import { Inject, Injectable } from '@nestjs/common';
import type { KV } from '@nats-io/kv';
import { AssignmentMapBucket, HeartbeatBucket, openBucket, recreateBucketIfMissing } from '@defender/nats-kv';
import { NatsConnectionService } from '../nats/nats-connection.service';

export const CLUSTER_KV_OPTIONS = Symbol('CLUSTER_KV_OPTIONS');

export interface ClusterKvOptions {
  stableIds: string;
  heartbeats: string;
  assignments: string;
  replicas: number;
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
    for (const [name, history] of this.bucketSpecs()) {
      if (await recreateBucketIfMissing(nc, name, { replicas: this.opts.replicas, history })) created.push(name);
    }
    return created;
  }

  private bucketSpecs(): [string, number][] {
    return [
      [this.opts.stableIds, 1],
      [this.opts.heartbeats, 1],
      [this.opts.assignments, 5],
    ];
  }

  private async open(): Promise<ClusterBuckets> {
    const nc = await this.nats.connection();
    const [stableIds, heartbeats, assignments] = await Promise.all(this.bucketSpecs().map(([name, history]) => openBucket(nc, name, { replicas: this.opts.replicas, history })));
    if (!stableIds || !heartbeats || !assignments) throw new Error('three buckets expected');
    return {
      stableIds,
      stableIdsName: this.opts.stableIds,
      heartbeats: new HeartbeatBucket(heartbeats, this.opts.heartbeats),
      assignments: new AssignmentMapBucket(assignments, this.opts.assignments),
    };
  }
}
