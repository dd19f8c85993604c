import { Controller, Get, NotFoundException } from '@nestjs/common';
import { ClusterKvService } from '@defender/nest-common';
import { LeadershipService } from './leadership.service';

/** GET /api/v1/status and /api/v1/assignments. */
@Controller('api/v1')
export class StatusController {
  constructor(
    private readonly leadership: LeadershipService,
    private readonly kv: ClusterKvService,
  ) {}

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
    };
  }

  /** The assignment map as stored in NATS KV (any replica can answer). */
  @Get('assignments')
  async assignments() {
    const stored = await (await this.kv.buckets()).assignments.read();
    if (!stored) throw new NotFoundException('no assignment map has been published yet');
    return { revision: stored.revision, ...stored.map };
  }
}
