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
export {
  balanceOf,
  type BalanceReport,
  chamberLoadMsPerHour,
  chamberLoads,
  CostCalibrator,
  type CostModel,
  DEFAULT_COST_MODEL,
  DEFAULT_PRIOR_RUNS_PER_HOUR,
  RateMeter,
} from './lib/load-model';
export {
  type BalanceObservation,
  DEFAULT_REBALANCE_POLICY,
  type RebalanceAdvice,
  RebalancePolicy,
  type RebalancePolicyConfig,
} from './lib/rebalance-policy';
