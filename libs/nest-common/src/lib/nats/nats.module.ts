import { DynamicModule, Module } from '@nestjs/common';
import { NATS_OPTIONS, NatsConnectionService, NatsModuleOptions } from './nats-connection.service';

/** Provides the process's {@link NatsConnectionService}; readiness includes a `nats` check. */
@Module({})
export class NatsModule {
  static forRoot(options: NatsModuleOptions): DynamicModule {
    return {
      module: NatsModule,
      global: true,
      providers: [{ provide: NATS_OPTIONS, useValue: options }, NatsConnectionService],
      exports: [NatsConnectionService],
    };
  }
}
