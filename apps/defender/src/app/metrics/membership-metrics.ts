import { makeCounterProvider, makeGaugeProvider, makeHistogramProvider } from '@willsoto/nestjs-prometheus';

/**
 * Metric names from seed 000 (defender and subscription-manager tables) and seed 002's state machine;
 * defender-metrics-observer.ts (beside it) moves them.
 */
export const M = {
  state: 'defender_state',
  stableId: 'defender_stable_id',
  assignedChambers: 'defender_assigned_chambers',
  assignmentVersion: 'defender_assignment_version',
  heartbeatErrors: 'defender_heartbeat_errors_total',
  subscriptionAdded: 'defender_subscription_added_total',
  subscriptionRemoved: 'defender_subscription_removed_total',
  subscriptionErrors: 'defender_subscription_errors_total',
  subscriptionUpdateDuration: 'defender_subscription_update_duration_seconds',
  currentSubscriptions: 'defender_current_subscriptions',
  mapsRejected: 'defender_assignment_maps_rejected_total',
  // Seed 002's process state machine (INITIALIZATION, CLAIMING_ID, FOLLOWER, STABLE, SHUTDOWN).
  stateTransitions: 'defender_state_transitions_total',
  stateDuration: 'defender_state_duration_seconds',
  initDuration: 'defender_initialization_duration_seconds',
  initFailures: 'defender_initialization_failures_total',
  claimAttempts: 'defender_id_claim_attempts_total',
  claimDuration: 'defender_id_claim_duration_seconds',
  stableIdClaimed: 'defender_stable_id_claimed',
  followerWait: 'defender_follower_wait_duration_seconds',
  mapVersion: 'defender_assignment_map_version',
  shutdowns: 'defender_shutdowns_total',
  shutdownDuration: 'defender_shutdown_duration_seconds',
  inflightAtShutdown: 'defender_inflight_messages_at_shutdown',
} as const;

/** The state-machine metrics' names (the dashboard's "Cluster state machine" row shows each). */
export const DEFENDER_STATE_METRIC_NAMES: readonly string[] = [
  M.stateTransitions,
  M.stateDuration,
  M.initDuration,
  M.initFailures,
  M.claimAttempts,
  M.claimDuration,
  M.stableIdClaimed,
  M.followerWait,
  M.mapVersion,
  M.shutdowns,
  M.shutdownDuration,
  M.inflightAtShutdown,
];

/** Seconds: state times from milliseconds (a claim) to minutes (a follower waiting out a cold-start window). */
const STATE_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export const membershipMetricProviders = [
  makeGaugeProvider({ name: M.state, help: 'Process state: 0=INITIALIZATION 1=CLAIMING_ID 2=FOLLOWER 3=STABLE 9=SHUTDOWN' }),
  makeGaugeProvider({ name: M.stableId, help: 'Claimed stable ID n of defender-n (-1 before a claim)' }),
  makeGaugeProvider({ name: M.assignedChambers, help: 'Chambers assigned to this defender' }),
  makeGaugeProvider({ name: M.assignmentVersion, help: 'Version of the assignment map applied' }),
  makeCounterProvider({ name: M.heartbeatErrors, help: 'Heartbeat publish or stable-ID refresh failures' }),
  makeCounterProvider({ name: M.subscriptionAdded, help: 'Chambers taken over' }),
  makeCounterProvider({ name: M.subscriptionRemoved, help: 'Chambers released' }),
  makeCounterProvider({ name: M.subscriptionErrors, help: 'Failed ownership updates' }),
  makeHistogramProvider({
    name: M.subscriptionUpdateDuration,
    help: 'Time to apply an assignment change (release, then acquire), seconds',
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
  }),
  makeGaugeProvider({ name: M.currentSubscriptions, help: 'Chambers currently owned' }),
  makeCounterProvider({ name: M.mapsRejected, help: 'Assignment maps ignored (invalid, older, or a lower fencing token)' }),
  makeCounterProvider({ name: M.stateTransitions, help: 'Process state transitions', labelNames: ['from', 'to'] }),
  makeHistogramProvider({ name: M.stateDuration, help: 'Time spent in a state, observed when it is left, seconds', labelNames: ['state'], buckets: STATE_BUCKETS }),
  makeHistogramProvider({ name: M.initDuration, help: 'INITIALIZATION: start to KV buckets open, seconds', buckets: STATE_BUCKETS }),
  makeCounterProvider({ name: M.initFailures, help: 'Failed tries to open the KV buckets during INITIALIZATION (retried)' }),
  makeCounterProvider({ name: M.claimAttempts, help: 'Stable-ID claim attempts (retries while NATS is unavailable or the pool is full included)' }),
  makeHistogramProvider({ name: M.claimDuration, help: 'CLAIMING_ID: start to a stable ID claimed, seconds', buckets: STATE_BUCKETS }),
  makeGaugeProvider({ name: M.stableIdClaimed, help: '1 while this process holds the stable ID, 0 once released', labelNames: ['id'] }),
  makeHistogramProvider({ name: M.followerWait, help: 'FOLLOWER: ID claimed to the first assignment map applied, seconds', buckets: STATE_BUCKETS }),
  makeGaugeProvider({ name: M.mapVersion, help: 'Version of the assignment map applied (the map a leader publishes, in embedded mode)' }),
  makeCounterProvider({ name: M.shutdowns, help: 'Graceful shutdowns begun (SIGTERM)' }),
  makeHistogramProvider({ name: M.shutdownDuration, help: 'SHUTDOWN: stop intake, drain, release the ID, seconds', buckets: [0.1, 0.5, 1, 2, 5, 10, 20, 30, 60] }),
  makeGaugeProvider({ name: M.inflightAtShutdown, help: 'Runs in flight when the shutdown began (drained or fenced)' }),
];
