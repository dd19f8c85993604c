import { Inject, Injectable } from '@nestjs/common';
import type { KV } from '@nats-io/kv';
import { AssignmentMapBucket, HeartbeatBucket, openBucket } from '@defender/nats-kv';
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

  private async open(): Promise<ClusterBuckets> {
    const nc = await this.nats.connection();
    const o = { replicas: this.opts.replicas };
    const [stableIds, heartbeats, assignments] = await Promise.all([
      openBucket(nc, this.opts.stableIds, { ...o, history: 1 }),
      openBucket(nc, this.opts.heartbeats, { ...o, history: 1 }),
      openBucket(nc, this.opts.assignments, { ...o, history: 5 }),
    ]);
    return {
      stableIds,
      stableIdsName: this.opts.stableIds,
      heartbeats: new HeartbeatBucket(heartbeats, this.opts.heartbeats),
      assignments: new AssignmentMapBucket(assignments, this.opts.assignments),
    };
  }
}
