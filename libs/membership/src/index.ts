export { defenderMapScope, diffOwnership, lowestDefenderId, ownedChambers } from './lib/ownership';
export type { OwnershipDiff } from './lib/ownership';
export { HeartbeatClock } from './lib/heartbeat-clock';
export type { HeartbeatReading, HeartbeatSeen } from './lib/heartbeat-clock';
export { DEFENDER_STATE_CODE, DefenderLifecycle, IllegalTransitionError } from './lib/defender-state';
export { buildAssignmentMap } from './lib/build-map';
export type { BuildMapInput } from './lib/build-map';
export { GENERATION_BITS, MAX_EPOCH_MAP_VERSION, ownerEpoch } from './lib/owner-epoch';
