import { DynamicModule, Global, Module } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { ControllerModule } from '@defender/controller';
import { ClusterKvModule, CommonAppModule, StoreModule, storeConfigFromEnv } from '@defender/nest-common';
import { DefenderConfig } from './config';
import { DefenderModule } from './defender.module';
import { DEFENDER_CONFIG } from './tokens';

@Global()
@Module({})
export class AppModule {
  static forRoot(config: DefenderConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CommonAppModule.forRoot('defender', config),
        ClusterKvModule.forRoot(config, ['stableIds', 'heartbeats']),
        // The trace buffer pool holds as much as the trace budget lets runs hold at once.
        StoreModule.forRoot(storeConfigFromEnv(config, config.POD_NAME ?? `defender:${process.pid}`, { tracePoolBytes: config.TRACE_MEMORY_MB * 1024 * 1024 })),
        DefenderModule,
        ...(config.ASSIGNMENT_CONTROLLER_ENABLED
          ? [ControllerModule.forRoot(config), RouterModule.register([{ path: 'controller', module: ControllerModule }])]
          : []),
      ],
      providers: [{ provide: DEFENDER_CONFIG, useValue: config }],
      exports: [DEFENDER_CONFIG],
    };
  }
}
