import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import { Counter } from 'prom-client';
import { ElectionAuthority } from '@defender/election';
import { ElectionAgentConfig } from '../config';
import { ELECTION_AGENT_CONFIG } from '../tokens';
import { ElectionStoreService } from './election-store.service';
import { METRICS } from './metrics';

/**
 * Holds the process's {@link ElectionAuthority} (the rules live in @defender/election) and turns
 * its events into metrics and log lines.
 */
@Injectable()
export class ElectionService {
  private readonly logger = new Logger('Election');
  readonly authority: ElectionAuthority;

  constructor(
    @Inject(ELECTION_AGENT_CONFIG) config: ElectionAgentConfig,
    store: ElectionStoreService,
    @InjectMetric(METRICS.grants) grants: Counter<string>,
    @InjectMetric(METRICS.leaderChanges) leaderChanges: Counter<string>,
    @InjectMetric(METRICS.renewFailures) readonly renewFailures: Counter<string>,
    @InjectMetric(METRICS.casConflicts) conflicts: Counter<string>,
  ) {
    this.authority = new ElectionAuthority({
      store,
      clockSkewMs: config.ELECTION_CLOCK_SKEW_MS,
      events: {
        granted: (e) => {
          grants.inc({ election: e.election });
          if (e.previousHolder !== e.candidate) leaderChanges.inc({ election: e.election });
          this.logger.log({
            msg: 'term granted',
            election: e.election,
            candidate: e.candidate,
            epoch: e.token,
            previous: e.previousHolder,
          });
        },
        renewRejected: (e) => {
          renewFailures.inc({ election: e.election, reason: e.reason });
          this.logger.log({
            msg: 'renewal refused',
            election: e.election,
            candidate: e.candidate,
            epoch: e.token,
            reason: e.reason,
          });
        },
        released: (e) =>
          this.logger.log({
            msg: 'term released',
            election: e.election,
            candidate: e.candidate,
            epoch: e.token,
          }),
        conflict: (e) => conflicts.inc({ election: e.election }),
      },
    });
  }
}
