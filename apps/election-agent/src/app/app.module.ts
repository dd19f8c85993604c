import { DynamicModule, Module } from '@nestjs/common';
import { CommonAppModule } from '@defender/nest-common';
import { ElectionAgentConfig } from './config';
import { GrpcHealthController } from './grpc-health/grpc-health.controller';

export const ELECTION_AGENT_CONFIG = Symbol('ELECTION_AGENT_CONFIG');

@Module({})
export class AppModule {
  static forRoot(config: ElectionAgentConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [CommonAppModule.forRoot('election-agent', config)],
      controllers: [GrpcHealthController],
      providers: [{ provide: ELECTION_AGENT_CONFIG, useValue: config }],
    };
  }
}
