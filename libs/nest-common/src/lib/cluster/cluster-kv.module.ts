import { DynamicModule, Module } from '@nestjs/common';
import { CLUSTER_KV_OPTIONS, ClusterBucketRole, ClusterKvOptions, ClusterKvService } from './cluster-kv.service';

/** Provides {@link ClusterKvService}; needs NatsModule (CommonAppModule) in the app. */
@Module({})
export class ClusterKvModule {
  /** `writes`: the buckets the app writes (it sets their value limit on buckets an older version created). */
  static forRoot(
    config: {
      NATS_KV_STABLE_IDS: string;
      NATS_KV_HEARTBEATS: string;
      NATS_KV_ASSIGNMENTS: string;
      NATS_KV_REPLICAS: number;
    },
    writes: readonly ClusterBucketRole[] = [],
  ): DynamicModule {
    const opts: ClusterKvOptions = {
      stableIds: config.NATS_KV_STABLE_IDS,
      heartbeats: config.NATS_KV_HEARTBEATS,
      assignments: config.NATS_KV_ASSIGNMENTS,
      replicas: config.NATS_KV_REPLICAS,
      writes,
    };
    return {
      module: ClusterKvModule,
      global: true,
      providers: [{ provide: CLUSTER_KV_OPTIONS, useValue: opts }, ClusterKvService],
      exports: [ClusterKvService],
    };
  }
}
