import { DynamicModule, Module } from '@nestjs/common';
import { ElectionAgentConfig } from '../config';
import { ELECTION_AGENT_CONFIG } from '../tokens';
import { ElectionAuthGuard } from './auth.guard';
import { ElectionGrpcController } from './election.grpc.controller';
import { ElectionService } from './election.service';
import { ElectionStoreService, LeaderWatchService } from './election-store.service';
import { metricProviders } from '../metrics/election-metrics';
import { ElectionMetricsObserver } from '../metrics/election-metrics-observer';

/** The election.v1 service: KV lease store, authority, observers, metrics, auth. */
@Module({})
export class ElectionModule {
  static forRoot(config: ElectionAgentConfig): DynamicModule {
    return {
      module: ElectionModule,
      controllers: [ElectionGrpcController],
      providers: [
        { provide: ELECTION_AGENT_CONFIG, useValue: config },
        ElectionStoreService,
        LeaderWatchService,
        ElectionService,
        ElectionAuthGuard,
        ElectionMetricsObserver,
        ...metricProviders,
      ],
    };
  }
}
