import { DynamicModule, Module } from '@nestjs/common';
import { CLUSTER_KV_OPTIONS, ClusterKvOptions, ClusterKvService } from './cluster-kv.service';

/** Provides {@link ClusterKvService}; needs NatsModule (CommonAppModule) in the app. */
@Module({})
export class ClusterKvModule {
  static forRoot(config: {
    NATS_KV_STABLE_IDS: string;
    NATS_KV_HEARTBEATS: string;
    NATS_KV_ASSIGNMENTS: string;
    NATS_KV_REPLICAS: number;
  }): DynamicModule {
    const opts: ClusterKvOptions = {
      stableIds: config.NATS_KV_STABLE_IDS,
      heartbeats: config.NATS_KV_HEARTBEATS,
      assignments: config.NATS_KV_ASSIGNMENTS,
      replicas: config.NATS_KV_REPLICAS,
    };
    return {
      module: ClusterKvModule,
      global: true,
      providers: [{ provide: CLUSTER_KV_OPTIONS, useValue: opts }, ClusterKvService],
      exports: [ClusterKvService],
    };
  }
}
