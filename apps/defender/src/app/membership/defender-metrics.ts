import { makeCounterProvider, makeGaugeProvider, makeHistogramProvider } from '@willsoto/nestjs-prometheus';

/** Metric names from seed 000 (defender and subscription-manager tables). */
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
} as const;

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
];
