export { defenderMapScope, diffOwnership, lowestDefenderId, ownedChambers } from './lib/ownership';
export type { OwnershipDiff } from './lib/ownership';
export { HeartbeatClock } from './lib/heartbeat-clock';
export type { HeartbeatReading, HeartbeatSeen } from './lib/heartbeat-clock';
export { DEFENDER_STATE_CODE, DefenderLifecycle, IllegalTransitionError } from './lib/defender-state';
export { buildAssignmentMap } from './lib/build-map';
export type { BuildMapInput } from './lib/build-map';
export { GENERATION_BITS, MAX_EPOCH_MAP_VERSION, ownerEpoch } from './lib/owner-epoch';
export {
  DefenderMembership,
  EXIT_CLAIM_LOST,
  EXIT_MEMBERSHIP_FAILED,
  EXIT_POOL_EXHAUSTED,
  HANG_AFTER_INTERVALS,
  POOL_EXHAUSTED_RETRIES,
  PULSES_PER_INTERVAL,
} from './lib/runtime/defender-membership';
export type { DefenderMembershipDeps } from './lib/runtime/defender-membership';
export type {
  AppliedAssignment,
  AssignmentMapPort,
  ChamberWork,
  HeartbeatEvents,
  HeartbeatHandle,
  HeartbeatSnapshot,
  MembershipCluster,
  MembershipEvents,
  MembershipSettings,
  StableIdClaim,
  StableIdPort,
  StoredAssignmentMap,
} from './lib/runtime/ports';
