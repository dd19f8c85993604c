import { Inject, Injectable, Logger } from '@nestjs/common';
import { ElectionAuthority } from '@defender/election';
import { ElectionAgentConfig } from '../config';
import { ELECTION_AGENT_CONFIG } from '../tokens';
import { ElectionStoreService } from './election-store.service';
import { ElectionMetricsObserver, type ElectionObserver } from '../metrics/election-metrics-observer';

/**
 * Holds the process's {@link ElectionAuthority} (the rules live in @defender/election) and turns
 * its events into metrics (through {@link ElectionMetricsObserver}) and log lines.
 */
@Injectable()
export class ElectionService {
  private readonly logger = new Logger('Election');
  readonly authority: ElectionAuthority;

  constructor(
    @Inject(ELECTION_AGENT_CONFIG) config: ElectionAgentConfig,
    store: ElectionStoreService,
    @Inject(ElectionMetricsObserver) metrics: ElectionObserver,
  ) {
    this.authority = new ElectionAuthority({
      store,
      clockSkewMs: config.ELECTION_CLOCK_SKEW_MS,
      events: {
        granted: (e) => {
          metrics.termGranted(e.election, e.previousHolder !== e.candidate);
          this.logger.log({
            msg: 'term granted',
            election: e.election,
            candidate: e.candidate,
            epoch: e.token,
            previous: e.previousHolder,
          });
        },
        renewRejected: (e) => {
          metrics.renewFailed(e.election, e.reason);
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
        conflict: (e) => metrics.casConflict(e.election),
      },
    });
  }
}
