import { DynamicModule, Module } from '@nestjs/common';
import type { StoreConfig } from '@defender/store';
import { STORE_CONFIG, StoreService } from './store.service';

/** Provides {@link StoreService} for the configured backend; readiness includes a `store` check. */
@Module({})
export class StoreModule {
  static forRoot(config: StoreConfig): DynamicModule {
    return {
      module: StoreModule,
      global: true,
      providers: [{ provide: STORE_CONFIG, useValue: config }, StoreService],
      exports: [StoreService],
    };
  }
}
