import { DynamicModule, Module } from '@nestjs/common';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';

/**
 * GET /metrics in Prometheus text format with the Node default metrics (prefixed with the app
 * name) and every metric the app registers through @willsoto/nestjs-prometheus providers.
 */
@Module({})
export class MetricsModule {
  static forRoot(opts: { app: string; defaultLabels?: Record<string, string> }): DynamicModule {
    return {
      module: MetricsModule,
      global: true,
      imports: [
        PrometheusModule.register({
          path: '/metrics',
          defaultLabels: { app: opts.app, ...(opts.defaultLabels ?? {}) },
          defaultMetrics: { enabled: true },
        }),
      ],
      exports: [PrometheusModule],
    };
  }
}
