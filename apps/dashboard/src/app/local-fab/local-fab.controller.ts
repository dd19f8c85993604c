import { ApiCreatedResponse, ApiForbiddenResponse, ApiHeader, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Body, Controller, ForbiddenException, Get, Headers, HttpCode, HttpException, Inject, NotFoundException, Post, ServiceUnavailableException } from '@nestjs/common';
import { DashboardConfig } from '../config';
import { DASHBOARD_CONFIG } from '../tokens';

/**
 * The local fab's buttons: forwards to the launcher's control endpoint (LOCAL_FAB_CONTROL_URL, with
 * its token). Only when that is configured; POSTs must carry `x-dashboard-action: 1` (a header a
 * cross-site form cannot set) and a JSON body.
 */
@ApiTags('local fab')
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

  @ApiOperation({ summary: 'Local fab: processes', description: 'Whether the dashboard runs in a local fab (`npm start`) and, if so, the launcher\'s processes.' })
  @ApiOkResponse({ description: '`{ enabled: false }` or `{ enabled: true, processes }`.' })
  @Get()
  async status() {
    if (!this.config.LOCAL_FAB_CONTROL_URL) return { enabled: false };
    return { enabled: true, ...((await this.forward('GET', '/control/processes')) as object) };
  }

  @ApiOperation({ summary: 'Local fab: add a defender', description: 'Starts one more defender process. Needs the header `x-dashboard-action: 1`.' })
  @ApiHeader({ name: 'x-dashboard-action', required: true, description: 'Must be `1` (a header a cross-site form cannot set).' })
  @ApiCreatedResponse({ description: 'The process started.' })
  @ApiForbiddenResponse({ description: 'Missing `x-dashboard-action: 1`.' })
  @ApiNotFoundResponse({ description: 'Not a local fab.' })
  @Post('defenders')
  @HttpCode(201)
  add(@Headers('x-dashboard-action') marker: string | undefined) {
    this.guard(marker);
    return this.forward('POST', '/control/defenders', {});
  }

  @ApiOperation({ summary: 'Local fab: crash a defender', description: 'SIGKILLs the defender named in the body (`{ defender }`). Needs `x-dashboard-action: 1`.' })
  @ApiHeader({ name: 'x-dashboard-action', required: true, description: 'Must be `1`.' })
  @ApiOkResponse({ description: 'The defender was killed.' })
  @ApiForbiddenResponse({ description: 'Missing `x-dashboard-action: 1`.' })
  @ApiNotFoundResponse({ description: 'Not a local fab.' })
  @Post('defenders/crash')
  @HttpCode(200)
  crash(@Headers('x-dashboard-action') marker: string | undefined, @Body() body: { defender?: unknown }) {
    this.guard(marker);
    return this.forward('POST', '/control/defenders/crash', { defender: body?.defender });
  }

  @ApiOperation({ summary: 'Local fab: drain a defender', description: 'Stops the defender named in the body (`{ defender }`) gracefully (SIGTERM: in-flight runs finish). Needs `x-dashboard-action: 1`.' })
  @ApiHeader({ name: 'x-dashboard-action', required: true, description: 'Must be `1`.' })
  @ApiOkResponse({ description: 'The defender is draining.' })
  @ApiForbiddenResponse({ description: 'Missing `x-dashboard-action: 1`.' })
  @ApiNotFoundResponse({ description: 'Not a local fab.' })
  @Post('defenders/drain')
  @HttpCode(200)
  drain(@Headers('x-dashboard-action') marker: string | undefined, @Body() body: { defender?: unknown }) {
    this.guard(marker);
    return this.forward('POST', '/control/defenders/drain', { defender: body?.defender });
  }

  @ApiOperation({ summary: 'Local fab: restart the leading controller', description: 'Kills (`{ mode: "kill" }`, default) or stops the controller that leads; the standby takes over. Needs `x-dashboard-action: 1`.' })
  @ApiHeader({ name: 'x-dashboard-action', required: true, description: 'Must be `1`.' })
  @ApiOkResponse({ description: 'The leader was restarted.' })
  @ApiForbiddenResponse({ description: 'Missing `x-dashboard-action: 1`.' })
  @ApiNotFoundResponse({ description: 'Not a local fab.' })
  @Post('controller/restart-leader')
  @HttpCode(200)
  restartLeader(@Headers('x-dashboard-action') marker: string | undefined, @Body() body: { mode?: unknown }) {
    this.guard(marker);
    return this.forward('POST', '/control/controller/restart-leader', { mode: body?.mode ?? 'kill' });
  }
}
