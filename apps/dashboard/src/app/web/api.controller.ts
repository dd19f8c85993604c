import { BadRequestException, Controller, DefaultValuePipe, Get, MessageEvent, NotFoundException, Param, ParseIntPipe, Query, Sse } from '@nestjs/common';
import { concat, defer, map, merge, Observable, of } from 'rxjs';
import { AlarmFeedService } from '../alarms/alarm-feed.service';
import { ChamberService, InvalidChamberKeyError } from '../chambers/chamber.service';
import { ClusterWatcherService } from '../cluster/cluster-watcher.service';

/**
 * The dashboard's read-only API: the cluster view, chambers with their U-charts, the alarm feed, and
 * one server-sent event stream that pushes the cluster view every refresh and each alarm as it comes.
 */
@Controller('api/v1')
export class ApiController {
  constructor(
    private readonly cluster: ClusterWatcherService,
    private readonly chambers: ChamberService,
    private readonly feed: AlarmFeedService,
  ) {}

  @Get('cluster')
  clusterView() {
    return this.cluster.snapshot();
  }

  @Get('map')
  assignmentMap() {
    const m = this.cluster.currentMap();
    if (!m) throw new NotFoundException('no assignment map has been published yet');
    return m;
  }

  @Get('chambers')
  chamberList() {
    return this.chambers.list().then((chambers) => ({ chambers }));
  }

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

  @Get('alarms')
  alarms(@Query('limit', new DefaultValuePipe(100), ParseIntPipe) limit: number, @Query('chamber') chamber: string | undefined) {
    return { counts: this.feed.counts(), alarms: this.feed.recent(Math.min(1000, Math.max(1, limit)), chamber) };
  }

  /** `cluster` events (the whole view, every refresh) and `alarm` events (one alarm or hold each). */
  @Sse('events')
  events(): Observable<MessageEvent> {
    const cluster = concat(
      defer(() => of(this.cluster.snapshot())),
      this.cluster.updates,
    ).pipe(map((s): MessageEvent => ({ type: 'cluster', data: s })));
    const alarms = this.feed.updates.pipe(map((a): MessageEvent => ({ type: 'alarm', data: a, id: String(a.seq) })));
    return merge(cluster, alarms);
  }
}
