export { holdIdOf } from './alarms';
export {
  CHART_KEYS,
  decodeHistory,
  decodeLimits,
  decodePoint,
  decodeRun,
  encodeLimits,
  encodePoint,
  type DecodedLimits,
} from './codec';
export { EvaluatorConfigError, InvalidStrategyDocumentError, InvalidTraceError } from './errors';
export { describeFlags, isBaselineData, POINT_FLAGS, ruleFlag, withoutBaselineData, type PointFlag } from './flags';
export { createRunEvaluator, evaluateWithHistory, storeIndicatorKey, type RunEvaluatorOptions } from './run-evaluator';
export {
  PENDING_BASELINE_CHART_TYPE,
  pendingBaselineOf,
  rebaselineRecords,
  type PendingBaseline,
  type RebaselineRequest,
} from './rebaseline';
export { MONITOR_CHART_TYPE, MONITOR_COUNT_KEYS } from './monitor-stage';
export { legacyModelLimitSets, monitorModelOf, monitorModelSummary, type MonitorModelSummary } from './monitor-model-store';
export { MONITOR_PART_CHART_TYPE } from './chart-types';
