import { DynamicModule, Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module';
import { MetricsModule } from '../metrics/metrics.module';
import { NatsModule } from '../nats/nats.module';
import { natsTlsFromEnv, NatsTlsEnv } from '../nats/nats-tls';

/** The parts of an app's config that {@link CommonAppModule} needs (see commonEnvShape). */
export interface CommonAppConfig extends NatsTlsEnv {
  NATS_SERVERS: string[];
  NATS_USER?: string;
  NATS_PASSWORD?: string;
  NATS_TOKEN?: string;
  POD_NAME?: string;
}

/**
 * What every Defender app imports: /health/live + /health/ready, /metrics, and the process's NATS
 * connection (named `<app>[:<pod>]` so `nats-server /connz` shows who is who).
 */
@Module({})
export class CommonAppModule {
  static forRoot(app: string, config: CommonAppConfig): DynamicModule {
    return {
      module: CommonAppModule,
      imports: [
        HealthModule,
        MetricsModule.forRoot({ app }),
        NatsModule.forRoot({
          servers: config.NATS_SERVERS,
          name: config.POD_NAME ? `${app}:${config.POD_NAME}` : app,
          user: config.NATS_USER,
          pass: config.NATS_PASSWORD,
          token: config.NATS_TOKEN,
          tls: natsTlsFromEnv(config),
        }),
      ],
      exports: [HealthModule, MetricsModule, NatsModule],
    };
  }
}
