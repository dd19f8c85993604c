import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import { BadRequestException, Controller, DefaultValuePipe, Get, MessageEvent, NotFoundException, Param, ParseIntPipe, Query, Req, Sse } from '@nestjs/common';
import { concat, defer, map, merge, NEVER, Observable, of, takeUntil, timer } from 'rxjs';
import type { AuthedRequest } from '../auth/auth.middleware';
import { AlarmFeedService } from '../alarms/alarm-feed.service';
import { ChamberService, InvalidChamberKeyError } from '../chambers/chamber.service';
import { ClusterWatcherService } from '../cluster/cluster-watcher.service';

/**
 * The dashboard's read-only API: the cluster view, chambers with their U-charts, the alarm feed, and
 * one server-sent event stream that pushes the cluster view every refresh and each alarm as it comes.
 */
@ApiTags('dashboard')
@Controller('api/v1')
export class ApiController {
  constructor(
    private readonly cluster: ClusterWatcherService,
    private readonly chambers: ChamberService,
    private readonly feed: AlarmFeedService,
  ) {}

  @ApiOperation({ summary: 'Cluster view', description: 'Defenders with their heartbeats and chambers, the controllers and who leads, the map, the alarm counts: what the dashboard shows.' })
  @ApiOkResponse({ description: 'The cluster snapshot.' })
  @Get('cluster')
  clusterView() {
    return this.cluster.snapshot();
  }

  @ApiOperation({ summary: 'Current assignment map', description: 'The newest map the dashboard has seen.' })
  @ApiOkResponse({ description: 'The map.' })
  @ApiNotFoundResponse({ description: 'No map has been published yet.' })
  @Get('map')
  assignmentMap() {
    const m = this.cluster.currentMap();
    if (!m) throw new NotFoundException('no assignment map has been published yet');
    return m;
  }

  @ApiOperation({ summary: 'Chambers', description: 'Every chamber in the store with its owner, high-water mark, last run, alarms and holds.' })
  @ApiOkResponse({ description: '`{ chambers: [...] }`.' })
  @Get('chambers')
  chamberList() {
    return this.chambers.list().then((chambers) => ({ chambers }));
  }

  @ApiOperation({ summary: 'One chamber with its charts', description: 'The chamber\'s recent runs with their points and limits (U-charts, the monitor\'s T² and SPE), its alarms with contributions, its strategy.' })
  @ApiParam({ name: 'key', description: 'Chamber key `<tool_id>:<chamber_id>`.' })
  @ApiQuery({ name: 'runs', required: false, description: 'Recent runs to include (default: the dashboard\'s).' })
  @ApiQuery({ name: 'all', required: false, description: '`1` or `true`: also the indicators not charted (constant ones).' })
  @ApiOkResponse({ description: 'The chamber detail.' })
  @ApiBadRequestResponse({ description: 'Not a valid chamber key.' })
  @Get('chambers/:key')
  async chamber(
    @Param('key') key: string,
    @Query('runs', new DefaultValuePipe(0), ParseIntPipe) runs: number,
    @Query('all') all: string | undefined,
  ) {
    try {
      return await this.chambers.detail(key, { ...(runs > 0 ? { runs } : {}), includeConstant: all === '1' || all === 'true' });
    } catch (err) {
      if (err instanceof InvalidChamberKeyError) throw new BadRequestException(err.message);
      throw err;
    }
  }

  @ApiOperation({ summary: 'Alarm feed', description: 'The newest alarms and holds (one line per run-level alarm), newest first, with counts.' })
  @ApiQuery({ name: 'limit', required: false, description: 'At most this many (1-1000, default 100).' })
  @ApiQuery({ name: 'chamber', required: false, description: 'Only this chamber (`<tool_id>:<chamber_id>`).' })
  @ApiOkResponse({ description: '`{ counts, alarms: [...] }`.' })
  @Get('alarms')
  alarms(@Query('limit', new DefaultValuePipe(100), ParseIntPipe) limit: number, @Query('chamber') chamber: string | undefined) {
    return { counts: this.feed.counts(), alarms: this.feed.recent(Math.min(1000, Math.max(1, limit)), chamber) };
  }

  @ApiOperation({ summary: 'Live updates (server-sent events)', description: '`cluster` events (the whole view, every refresh) and `alarm` events (one alarm or hold each, `id` = its sequence).' })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({ description: 'An event stream.' })
  /** `cluster` events (the whole view, every refresh) and `alarm` events (one alarm or hold each). */
  @Sse('events')
  events(@Req() req: AuthedRequest): Observable<MessageEvent> {
    const cluster = concat(
      defer(() => of(this.cluster.snapshot())),
      this.cluster.updates,
    ).pipe(map((s): MessageEvent => ({ type: 'cluster', data: s })));
    const alarms = this.feed.updates.pipe(map((a): MessageEvent => ({ type: 'alarm', data: a, id: String(a.seq) })));
    // A browser session's stream ends with the session; the browser reconnects, is refused, and signs in again.
    const expires = req.principal?.expiresAtMs;
    return merge(cluster, alarms).pipe(takeUntil(expires === undefined ? NEVER : timer(Math.max(0, expires - Date.now()))));
  }
}
