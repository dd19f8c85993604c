import { makeCounterProvider } from '@willsoto/nestjs-prometheus';

/** Metric names (served on GET /metrics, labelled app="election-agent"). */
export const METRICS = {
  /** New terms granted (token incremented), by election. */
  grants: 'election_agent_grants_total',
  /** New terms whose leader differs from the previous term's, by election. */
  leaderChanges: 'election_agent_leader_changes_total',
  /** Renewals refused (reason: superseded, released, not-holder, wrong-key, no-term) or failed (unavailable, contention, internal). */
  renewFailures: 'election_agent_renew_failures_total',
  /** Compare-and-set writes that lost a race and were decided again. */
  casConflicts: 'election_agent_cas_conflicts_total',
  /** gRPC calls of election.v1 by method and status code name. */
  requests: 'election_agent_requests_total',
} as const;

export const metricProviders = [
  makeCounterProvider({ name: METRICS.grants, help: 'New election terms granted', labelNames: ['election'] }),
  makeCounterProvider({
    name: METRICS.leaderChanges,
    help: 'New terms whose leader differs from the previous holder',
    labelNames: ['election'],
  }),
  makeCounterProvider({
    name: METRICS.renewFailures,
    help: 'Lease renewals refused or failed',
    labelNames: ['election', 'reason'],
  }),
  makeCounterProvider({
    name: METRICS.casConflicts,
    help: 'Lost compare-and-set races on election records',
    labelNames: ['election'],
  }),
  makeCounterProvider({
    name: METRICS.requests,
    help: 'election.v1 gRPC calls',
    labelNames: ['method', 'code'],
  }),
];
