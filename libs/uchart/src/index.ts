export {
  ChartConfigError,
  ConvergenceError,
  DegenerateBaselineError,
  InsufficientBaselineError,
  TraceValidationError,
  UnknownStepError,
  UnknownSvidError,
  type TraceIssue,
} from './lib/errors';
export {
  createTrace,
  sampleTime,
  type SampleArray,
  type SampleTiming,
  type StepMarker,
  type StepSpan,
  type Trace,
  type TraceInput,
} from './lib/trace';
export { resolveWindow, type SampleRange, type WindowSpec } from './lib/window';
export { computeBaseStatistics, createBaseStatistics, type BaseStatistics } from './lib/statistics';
export { computePercentiles, floydRivestSelect, SelectionScratch, type Percentiles } from './lib/selection';
export {
  IndicatorCalculator,
  medianFilter3,
  PERCENTILE_STATISTICS,
  STATISTICS,
  statisticValue,
  type IndicatorOutcome,
  type IndicatorSpec,
  type NoPointReason,
  type SampleFilter,
  type StatisticName,
} from './lib/indicators';
export { c4, D2_MOVING_RANGE, logGamma } from './lib/constants';
export {
  estimateSigma,
  individualsLimits,
  shewhartLimits,
  type ShewhartLimits,
  type SigmaEstimate,
  type SigmaMethod,
} from './lib/charts/individuals';
export {
  ewmaAsymptoticLimits,
  ewmaHalfWidth,
  ewmaNext,
  ewmaSeries,
  validateEwmaParams,
  type EwmaParams,
  type EwmaSeries,
} from './lib/charts/ewma';
export {
  cusumCarry,
  cusumInitial,
  cusumNext,
  cusumSeries,
  validateCusumParams,
  type CusumParams,
  type CusumSeries,
  type CusumState,
  type CusumStep,
} from './lib/charts/cusum';
export {
  attributeLimits,
  attributeRate,
  attributeStatistic,
  type AttributeChartType,
  type AttributeSample,
} from './lib/charts/attribute';
export {
  chartedStatistic,
  establishBaseline,
  isAttributeChart,
  knownLimits,
  pointLimits,
  rebaseline,
  type BaselineOptions,
  type BaselineSample,
  type ChartSpec,
  type FrozenLimits,
  type LimitsReason,
  type PointLimits,
} from './lib/baseline';
export {
  controlConstants,
  MAX_EXACT_RANGE_N,
  MAX_TABULATED_D2_N,
  MAX_TABULATED_D3_N,
  rangeConstants,
  rangeMoments,
  tabulatedRangeMoments,
  type ControlConstants,
  type RangeConstantsSource,
  type RangeMoments,
} from './lib/charts/control-constants';
export {
  estimateSubgroupSigma,
  evaluateSubgroups,
  knownSubgroupLimits,
  subgroupLimits,
  subgroupPointLimits,
  subgroupStatistic,
  subgroupStatistics,
  type SubgroupChartOptions,
  type SubgroupChartType,
  type SubgroupLimits,
  type SubgroupPoint,
  type SubgroupSigmaMethod,
  type SubgroupStatistics,
} from './lib/charts/subgroup';
export {
  evaluateMovingRanges,
  knownMovingRangeLimits,
  movingRangeLimits,
  movingRanges,
  type MovingRangeLimits,
  type MovingRangePoint,
} from './lib/charts/moving-range';
export {
  processCapability,
  type CapabilityIndex,
  type CapabilityOptions,
  type ProcessCapability,
  type SpecLimits,
} from './lib/charts/capability';
export {
  betaQuantile,
  chiSquareCdf,
  chiSquareQuantile,
  fCdf,
  fQuantile,
  normalQuantile,
} from './lib/distributions';
export {
  boxSpeLimit,
  fitHotelling,
  fitPcaModel,
  fitScaledChiSquare,
  hotellingPhaseOneLimit,
  hotellingPhaseTwoLimit,
  jacksonMudholkarLimit,
  MultivariateInputError,
  NotPositiveDefiniteError,
  scaledChiSquareQuantile,
  scoreHotelling,
  scorePca,
  type ComponentRule,
  type CovarianceEstimator,
  type DroppedReason,
  type DroppedVariable,
  type HotellingModel,
  type HotellingOptions,
  type HotellingScore,
  type LimitMethod,
  type PcaModel,
  type PcaOptions,
  type PcaScore,
  type ScaledChiSquare,
  type SpeLimitMethod,
  type VariableContribution,
} from './lib/multivariate';
