import { DynamicModule, Global, Module } from '@nestjs/common';
import { ControllerModule } from '@defender/controller';
import { ClusterKvModule, CommonAppModule, StoreModule, storeConfigFromEnv } from '@defender/nest-common';
import { ControllerConfig } from './config';

@Global()
@Module({})
export class AppModule {
  static forRoot(config: ControllerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CommonAppModule.forRoot('assignment-controller', config),
        ClusterKvModule.forRoot(config, ['assignments']),
        StoreModule.forRoot(storeConfigFromEnv(config, config.POD_NAME ?? `assignment-controller:${process.pid}`)),
        ControllerModule.forRoot(config),
      ],
    };
  }
}
