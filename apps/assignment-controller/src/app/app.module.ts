import { DynamicModule, Global, Module } from '@nestjs/common';
import { ClusterKvModule, CommonAppModule, StoreModule, storeConfigFromEnv } from '@defender/nest-common';
import { ControllerConfig } from './config';
import { LeadershipModule } from './leadership/leadership.module';
import { CONTROLLER_CONFIG } from './tokens';

@Global()
@Module({})
export class AppModule {
  static forRoot(config: ControllerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CommonAppModule.forRoot('assignment-controller', config),
        ClusterKvModule.forRoot(config),
        StoreModule.forRoot(storeConfigFromEnv(config, config.POD_NAME ?? `assignment-controller:${process.pid}`)),
        LeadershipModule,
      ],
      providers: [{ provide: CONTROLLER_CONFIG, useValue: config }],
      exports: [CONTROLLER_CONFIG],
    };
  }
}
