import { DynamicModule, Module } from '@nestjs/common';
import { CommonAppModule } from '@defender/nest-common';
import { ElectionAgentConfig } from './config';
import { ElectionModule } from './election/election.module';
import { GrpcHealthController } from './grpc-health/grpc-health.controller';
import { ELECTION_AGENT_CONFIG } from './tokens';

export { ELECTION_AGENT_CONFIG } from './tokens';

@Module({})
export class AppModule {
  static forRoot(config: ElectionAgentConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [CommonAppModule.forRoot('election-agent', config), ElectionModule.forRoot(config)],
      controllers: [GrpcHealthController],
      providers: [{ provide: ELECTION_AGENT_CONFIG, useValue: config }],
    };
  }
}
