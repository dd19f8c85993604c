/**
 * Multivariate process monitoring of a run's indicator vector: Hotelling T² (individual, subgrouped as
 * qcc's `mqcc`, known parameters), PCA with T² and SPE (Q),
 * contributions, theory or leave-one-out limits, and the linear algebra they use (the distribution
 * functions are in ../distributions.ts, shared with the univariate charts).
 */
export {
  DEFAULT_ALPHA,
  MIN_LOO_RUNS,
  type DroppedReason,
  type DroppedVariable,
  type LimitMethod,
  type VariableContribution,
} from './baseline-data';
export { MultivariateInputError, NotPositiveDefiniteError } from './errors';
export {
  fitHotelling,
  scoreHotelling,
  type CovarianceEstimator,
  type HotellingModel,
  type HotellingOptions,
  type HotellingScore,
} from './hotelling';
export {
  boxSpeLimit,
  fitScaledChiSquare,
  hotellingPhaseOneLimit,
  hotellingPhaseTwoLimit,
  jacksonMudholkarLimit,
  fitTail,
  knownT2Limit,
  logNormalPredictionLimit,
  residualMoments,
  scaledChiSquareQuantile,
  subgroupT2PhaseOneLimit,
  subgroupT2PhaseTwoLimit,
  type ResidualMoments,
  type ScaledChiSquare,
  type TailFit,
} from './limits';
export {
  cholesky,
  choleskyInverse,
  choleskyLogDeterminant,
  choleskySolve,
  columnMeans,
  covarianceMatrix,
  symmetricEigen,
  type SymmetricEigen,
} from './linalg';
export {
  knownParameterT2,
  mqcc,
  subgroupMeans,
  type KnownT2Chart,
  type KnownT2Options,
  type MqccChart,
  type MqccData,
  type MqccOptions,
  type MqccType,
} from './mqcc';
export {
  fitPcaBasis,
  fitPcaModel,
  pcaComponentCount,
  preparePcaBasis,
  type ComponentRule,
  type PcaBasis,
  type PcaModel,
  type PcaOptions,
  type SpeLimitMethod,
} from './pca';
export { pcaResidualContributions, scorePca, type PcaScore } from './pca-score';
