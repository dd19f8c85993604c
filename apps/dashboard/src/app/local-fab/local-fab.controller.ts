import { Body, Controller, ForbiddenException, Get, Headers, HttpCode, HttpException, Inject, NotFoundException, Post, ServiceUnavailableException } from '@nestjs/common';
import { DashboardConfig } from '../config';
import { DASHBOARD_CONFIG } from '../tokens';

/**
 * The local fab's buttons: forwards to the launcher's control endpoint (LOCAL_FAB_CONTROL_URL, with
 * its token). Only when that is configured; POSTs must carry `x-dashboard-action: 1` (a header a
 * cross-site form cannot set) and a JSON body.
 */
@Controller('api/v1/local-fab')
export class LocalFabController {
  constructor(@Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig) {}

  private async forward(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const base = this.config.LOCAL_FAB_CONTROL_URL;
    if (!base) throw new NotFoundException('not a local fab: LOCAL_FAB_CONTROL_URL is not set');
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.config.LOCAL_FAB_CONTROL_TOKEN}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(60_000),
      });
    } catch (err) {
      throw new ServiceUnavailableException(`the local fab's control endpoint does not answer: ${(err as Error).message}`);
    }
    const payload = (await res.json().catch(() => ({ error: `HTTP ${res.status}` }))) as Record<string, unknown>;
    if (!res.ok) throw new HttpException({ statusCode: res.status, message: payload['error'] ?? `HTTP ${res.status}` }, res.status);
    return payload;
  }

  private guard(marker: string | undefined): void {
    if (marker !== '1') throw new ForbiddenException('missing x-dashboard-action header');
  }

  @Get()
  async status() {
    if (!this.config.LOCAL_FAB_CONTROL_URL) return { enabled: false };
    return { enabled: true, ...((await this.forward('GET', '/control/processes')) as object) };
  }

  @Post('defenders')
  @HttpCode(201)
  add(@Headers('x-dashboard-action') marker: string | undefined) {
    this.guard(marker);
    return this.forward('POST', '/control/defenders', {});
  }

  @Post('defenders/crash')
  @HttpCode(200)
  crash(@Headers('x-dashboard-action') marker: string | undefined, @Body() body: { defender?: unknown }) {
    this.guard(marker);
    return this.forward('POST', '/control/defenders/crash', { defender: body?.defender });
  }

  @Post('defenders/drain')
  @HttpCode(200)
  drain(@Headers('x-dashboard-action') marker: string | undefined, @Body() body: { defender?: unknown }) {
    this.guard(marker);
    return this.forward('POST', '/control/defenders/drain', { defender: body?.defender });
  }

  @Post('controller/restart-leader')
  @HttpCode(200)
  restartLeader(@Headers('x-dashboard-action') marker: string | undefined, @Body() body: { mode?: unknown }) {
    this.guard(marker);
    return this.forward('POST', '/control/controller/restart-leader', { mode: body?.mode ?? 'kill' });
  }
}
