export { computeAssignment } from './lib/compute-assignment';
export {
  DuplicateChamberError,
  DuplicateDefenderError,
  InfeasibleAssignmentError,
  InvalidAssignmentInputError,
  InvalidTriggerInputError,
  NoDefendersError,
} from './lib/errors';
export type {
  AssignmentMode,
  AssignmentOptions,
  AssignmentResult,
  AssignmentStats,
  AssignmentStrategyName,
  ChamberInput,
  ChamberMove,
  DefenderInput,
  MoveReason,
  PreviousAssignment,
} from './lib/types';
export {
  AssignmentTrigger,
  type ClusterLifecycle,
  type ClusterState,
  DEFAULT_TRIGGER_CONFIG,
  type HeartbeatObservation,
  type IdleDecision,
  type NoDefendersDecision,
  type PublishedMapInfo,
  type RecomputeDecision,
  type TopologyChanges,
  type TriggerConfig,
  type TriggerDecision,
  type TriggerKind,
  type WaitDecision,
} from './lib/trigger';
