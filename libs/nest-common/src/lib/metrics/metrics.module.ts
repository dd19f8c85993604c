import { Controller, DynamicModule, Get, Module, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { PrometheusController, PrometheusModule } from '@willsoto/nestjs-prometheus';

/** The library's /metrics route, documented in the app's OpenAPI document. */
@ApiTags('metrics')
@Controller()
export class MetricsController extends PrometheusController {
  @Get()
  @ApiOperation({ summary: 'Prometheus metrics', description: 'Every metric of the app (its own and the Node defaults, labelled with the app name) in the Prometheus text format.' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'The metrics, text/plain; version=0.0.4.' })
  override index(@Res({ passthrough: true }) response: unknown): Promise<string> {
    return super.index(response);
  }
}

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
          controller: MetricsController,
          defaultLabels: { app: opts.app, ...(opts.defaultLabels ?? {}) },
          defaultMetrics: { enabled: true },
        }),
      ],
      exports: [PrometheusModule],
    };
  }
}
