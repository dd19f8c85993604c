import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Controller, Get, Inject, Optional } from '@nestjs/common';
import { LeadershipService } from '@defender/controller';
import { DEFENDER_CONFIG } from '../tokens';
import { DefenderConfig } from '../config';
import { MembershipService } from './membership.service';

/** GET /api/v1/status and /api/v1/assignments (seed 000's shapes). */
@ApiTags('status')
@Controller('api/v1')
export class StatusController {
  constructor(
    private readonly membership: MembershipService,
    @Inject(DEFENDER_CONFIG) private readonly config: DefenderConfig,
    @Optional() private readonly leadership?: LeadershipService,
  ) {}

  @ApiOperation({ summary: 'Defender status', description: 'Stable ID, pod, state (seed 002\'s state machine), whether it leads (embedded controller mode), owned chambers, map version, uptime.' })
  @ApiOkResponse({ description: 'The status (seed 000\'s shape).' })
  @Get('status')
  status() {
    return {
      defenderId: this.membership.defenderId ?? null,
      podName: this.config.POD_NAME ?? null,
      state: this.membership.state,
      // True only in the embedded mode, while this defender's controller holds the term.
      isLeader: this.leadership?.isLeader ?? false,
      assignedChambers: this.membership.ownedChambers.length,
      assignmentVersion: this.membership.mapVersion,
      uptimeSeconds: this.membership.uptimeSeconds,
    };
  }

  @ApiOperation({ summary: 'Chambers this defender owns', description: 'Its stable ID, the assignment map version and the chambers it owns under it.' })
  @ApiOkResponse({ description: '`{ defenderId, assignmentVersion, chambers }`.' })
  @Get('assignments')
  assignments() {
    return {
      defenderId: this.membership.defenderId ?? null,
      assignmentVersion: this.membership.mapVersion,
      chambers: this.membership.ownedChambers,
    };
  }
}
