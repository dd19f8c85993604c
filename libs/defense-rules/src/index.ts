export { StrategyValidationError, type StrategyIssue } from './lib/errors';
export {
  checkRule,
  describeRule,
  flagSeries,
  NAMED_RULES,
  NELSON_RULES,
  ruleWindow,
  WESTERN_ELECTRIC_RULES,
  type RuleName,
  type RunRule,
  type RunRuleKind,
  type ZonedPoint,
} from './lib/rules';
export {
  DEFAULT_STRATEGY,
  parseStrategy,
  resolveStrategy,
  STRATEGY_SCHEMA_VERSION,
  validateStrategy,
  type ActionType,
  type DefenseStrategy,
  type EscalationRule,
  type ExposureSource,
  type IndicatorConfig,
  type StrategyValidation,
} from './lib/strategy';
export { escalationReasons, evaluate, type Action, type Evaluation, type InvolvedPoint, type SkippedReading, type Violation } from './lib/evaluate';
export { indicatorKey, readingsFromTrace, type AlarmContext, type NewRun, type Reading } from './lib/readings';
export {
  escalationHistoryRuns,
  historyShortfall,
  maybeEstablishBaseline,
  recentAlarmsOf,
  steadyChartRuns,
  phaseOneSamples,
  requiredHistoryRuns,
  steadyHistoryRuns,
  type ChamberHistory,
  type ChartPoint,
  type RunRecord,
} from './lib/chamber-history';
export { DEFAULT_STRATEGY_DOCUMENT, WESTERN_ELECTRIC_STRATEGY_DOCUMENT } from './lib/default-strategy';
export { STRATEGY_PRESETS, strategyPreset, type StrategyPreset } from './lib/presets';
export { levelCentre, levelTerms, nextLevelOffsets, type LevelTerms } from './lib/level-centre';
export { calibratedFamilyWidth, fitGumbel, gumbelQuantile, leaveOneOutMaxima, type GumbelFit } from './lib/family-limits';
export {
  DEFAULT_EVENT_ACTIONS,
  DEFAULT_MONITOR_STATISTICS,
  EVENT_ACTIONS,
  MONITOR_MODEL_KEY,
  monitorGroup,
  monitorKey,
  statisticParts,
  type Budget,
  type EventAction,
  type MonitorConfig,
  type MonitorStatistic,
} from './lib/monitor-config';
export { monitorLayout, monitorSpecs, monitorValues, type MonitorLayout, type MonitorSpec } from './lib/monitor-indicators';
export { fitMonitorModel, MonitorBaselineError, type MonitorModel, type NotCharted, type SvidLattice } from './lib/monitor';
export { residualSds, scoreMonitorRun, type MonitorScore, type MonitorViolation } from './lib/monitor-score';
export { FEW_LEVELS, learnLattice, type Lattice } from './lib/lattice';
