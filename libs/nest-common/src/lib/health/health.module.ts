import { BeforeApplicationShutdown, Global, Module } from '@nestjs/common';
import { HealthController } from './health.controller';
import { HealthRegistry } from './health.registry';

/** GET /health/live and /health/ready, backed by the shared {@link HealthRegistry}. */
@Global()
@Module({
  controllers: [HealthController],
  providers: [HealthRegistry],
  exports: [HealthRegistry],
})
export class HealthModule implements BeforeApplicationShutdown {
  constructor(private readonly registry: HealthRegistry) {}

  beforeApplicationShutdown(): void {
    this.registry.beginShutdown();
  }
}
