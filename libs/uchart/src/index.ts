export {
  ChartConfigError,
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
  betaQuantile,
  boxSpeLimit,
  chiSquareCdf,
  chiSquareQuantile,
  fCdf,
  fitHotelling,
  fitPcaModel,
  fitScaledChiSquare,
  fQuantile,
  hotellingPhaseOneLimit,
  hotellingPhaseTwoLimit,
  jacksonMudholkarLimit,
  MultivariateInputError,
  normalQuantile,
  scaledChiSquareQuantile,
  scoreHotelling,
  scorePca,
  type ComponentRule,
  type HotellingModel,
  type HotellingOptions,
  type HotellingScore,
  type PcaModel,
  type PcaOptions,
  type PcaScore,
  type VariableContribution,
} from './lib/multivariate';
