import { Controller, Get, HttpCode, Res } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { HealthRegistry } from './health.registry';

/** The part of the platform response used here (Express or Fastify). */
interface StatusSettable {
  status(code: number): unknown;
}

@Controller('health')
export class HealthController {
  /** Monotonic: uptime must not jump with a wall-clock step. */
  private readonly startedAt = performance.now();

  constructor(private readonly registry: HealthRegistry) {}

  /** Liveness: the process serves HTTP and its event loop turns. */
  @Get('live')
  @HttpCode(200)
  live(): { status: 'ok'; uptimeSeconds: number } {
    return { status: 'ok', uptimeSeconds: Math.round((performance.now() - this.startedAt) / 1000) };
  }

  /** Readiness: 200 when every registered check holds, 503 otherwise, with each check's state. */
  @Get('ready')
  async ready(@Res({ passthrough: true }) res: StatusSettable): Promise<{ status: string; checks: object }> {
    const report = await this.registry.report();
    res.status(report.ready ? 200 : 503);
    return { status: report.ready ? 'ready' : 'not-ready', checks: report.checks };
  }
}
