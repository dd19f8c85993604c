import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Controller, Get, NotFoundException } from '@nestjs/common';
import { ClusterKvService } from '@defender/nest-common';
import { LeadershipService } from './leadership.service';

/** GET /api/v1/status and /api/v1/assignments. */
@ApiTags('status')
@Controller('api/v1')
export class StatusController {
  constructor(
    private readonly leadership: LeadershipService,
    private readonly kv: ClusterKvService,
  ) {}

  @ApiOperation({ summary: 'Controller status', description: 'Whether this controller leads, its fencing token, lifecycle, cluster state, last decision, a pending trigger (topology change waiting for its window), active defenders, the published map version, and what the map\'s weights are (`balanceBy`: `load`, expected CPU µs per hour, ADR 0008; or `samples`, samples per run).' })
  @ApiOkResponse({ description: 'The status.' })
  @Get('status')
  status() {
    const current = this.leadership.current;
    const d = current?.engine.decision;
    return {
      controllerId: this.leadership.controllerId,
      isLeader: this.leadership.isLeader,
      fencingToken: current ? String(current.term.fencingToken) : null,
      lifecycle: current?.engine.lifecycle ?? null,
      clusterState: d?.state ?? null,
      lastDecision: d ? d.action : null,
      pendingTrigger: d?.action === 'wait' && current ? { trigger: d.trigger, deadline: current.engine.wallTimeOf(d.deadline).toISOString(), changes: d.changes } : null,
      activeDefenders: current?.engine.activeDefenders ?? null,
      assignmentVersion: this.leadership.publishedMap?.version ?? null,
      balanceBy: this.leadership.balanceBy,
    };
  }

  @ApiOperation({ summary: 'The assignment map', description: 'The map as stored in NATS KV with its revision (any replica can answer).' })
  @ApiOkResponse({ description: 'The map: version, fencing token, state, defenders, chamber assignments.' })
  @ApiNotFoundResponse({ description: 'No map has been published yet.' })
  /** The assignment map as stored in NATS KV (any replica can answer). */
  @Get('assignments')
  async assignments() {
    const stored = await (await this.kv.buckets()).assignments.read();
    if (!stored) throw new NotFoundException('no assignment map has been published yet');
    return { revision: stored.revision, ...stored.map };
  }
}
