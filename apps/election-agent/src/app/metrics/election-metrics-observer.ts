import { Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import type { RenewRejection } from '@defender/election';
import { METRICS } from './election-metrics';

/** election.v1 methods, as counted in `election_agent_requests_total{method}`. */
export type ElectionMethod = 'Campaign' | 'Renew' | 'Release' | 'GetLeader' | 'Observe';

/** Why a renewal did not extend the lease: refused by the rules, or the call failed. */
export type RenewFailureReason = RenewRejection | 'unavailable' | 'contention' | 'internal';

/**
 * What the election agent reports: terms granted, renewals that failed, lost compare-and-set
 * races and the gRPC calls it answered. {@link ElectionMetricsObserver} turns each event into the
 * agent's metrics; tests pass a recording fake.
 */
export interface ElectionObserver {
  /** A new term of `election` was granted; `leaderChanged` when its holder differs from the previous term's. */
  termGranted(election: string, leaderChanged: boolean): void;
  /** A renewal of `election` was refused or failed. */
  renewFailed(election: string, reason: RenewFailureReason): void;
  /** A compare-and-set on `election`'s record lost a race and was decided again. */
  casConflict(election: string): void;
  /** An election.v1 call ended with the gRPC status `code` (its name: `OK`, `UNAVAILABLE`, ...). */
  requestAnswered(method: ElectionMethod, code: string): void;
}

/** The election agent's metrics (`metrics/election-metrics.ts`): the one Nest provider that holds them. */
@Injectable()
export class ElectionMetricsObserver implements ElectionObserver {
  constructor(
    @InjectMetric(METRICS.grants) private readonly grants: Counter<string>,
    @InjectMetric(METRICS.leaderChanges) private readonly leaderChanges: Counter<string>,
    @InjectMetric(METRICS.renewFailures) private readonly renewFailures: Counter<string>,
    @InjectMetric(METRICS.casConflicts) private readonly casConflicts: Counter<string>,
    @InjectMetric(METRICS.requests) private readonly requests: Counter<string>,
  ) {}

  termGranted(election: string, leaderChanged: boolean): void {
    this.grants.inc({ election });
    if (leaderChanged) this.leaderChanges.inc({ election });
  }

  renewFailed(election: string, reason: RenewFailureReason): void {
    this.renewFailures.inc({ election, reason });
  }

  casConflict(election: string): void {
    this.casConflicts.inc({ election });
  }

  requestAnswered(method: ElectionMethod, code: string): void {
    this.requests.inc({ method, code });
  }
}
