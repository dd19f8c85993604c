import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { Controller, Get, HttpCode, Res } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { HealthRegistry } from './health.registry';

/** The part of the platform response used here (Express or Fastify). */
interface StatusSettable {
  status(code: number): unknown;
}

@ApiTags('health')
@Controller('health')
export class HealthController {
  /** Monotonic: uptime must not jump with a wall-clock step. */
  private readonly startedAt = performance.now();

  constructor(private readonly registry: HealthRegistry) {}

  @ApiOperation({ summary: 'Liveness', description: 'The process serves HTTP and its event loop turns (a Kubernetes liveness probe).' })
  @ApiOkResponse({ description: '`{ status: "ok", uptimeSeconds }`.' })
  /** Liveness: the process serves HTTP and its event loop turns. */
  @Get('live')
  @HttpCode(200)
  live(): { status: 'ok'; uptimeSeconds: number } {
    return { status: 'ok', uptimeSeconds: Math.round((performance.now() - this.startedAt) / 1000) };
  }

  @ApiOperation({ summary: 'Readiness', description: 'Every registered check (NATS, the store, the app\'s own) with its state; 200 when all hold (a Kubernetes readiness probe).' })
  @ApiOkResponse({ description: 'Ready: `{ status: "ready", checks }`.' })
  @ApiServiceUnavailableResponse({ description: 'Not ready: `{ status: "not-ready", checks }` (the failing checks say why).' })
  /** Readiness: 200 when every registered check holds, 503 otherwise, with each check's state. */
  @Get('ready')
  async ready(@Res({ passthrough: true }) res: StatusSettable): Promise<{ status: string; checks: object }> {
    const report = await this.registry.report();
    res.status(report.ready ? 200 : 503);
    return { status: report.ready ? 'ready' : 'not-ready', checks: report.checks };
  }
}
