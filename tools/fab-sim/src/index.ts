// The simulator's building blocks for other tools (the whole-fab replay and detection benchmarks in
// tools/bench): the fab generator, the trace synthesizer, excursions and their calibration, the run
// schedule and ids, chamber seeding, detection metrics.
export {
  ENDPOINT_SD,
  FAB_SIZES,
  generateFab,
  MAX_WEIGHT,
  MIN_WEIGHT,
  pmCycleOf,
  runGaussian,
  slowLevelSigmas,
  svidName,
  svidNames,
  TOOL_PROFILES,
  weightStats,
  type ChamberSpec,
  type FabOptions,
  type FabProfile,
  type FabSpec,
  type NoiseKind,
  type RecipeSpec,
  type SensorSpec,
  type StepSpec,
  type ToolSpec,
  type WanderTerm,
} from './lib/fab';
export { Gaussian, intIn, mix, pick, rng, type Rng } from './lib/rng';
export {
  runLayout,
  samplesPerRun,
  setpointValue,
  stepStarts,
  synthesizeTrace,
  type Effect,
  type RunContext,
  type RunEffects,
  type RunLayout,
} from './lib/trace';
export {
  byChamber,
  CALIBRATION_RUNS,
  chamberOf,
  effectsFor,
  EXCURSION_KINDS,
  EXCURSION_SHAPES,
  MIN_GAP_RUNS,
  REAL_EQUIPMENT_KINDS,
  parseKinds,
  parseSizes,
  planExcursions,
  type Excursion,
  type ExcursionKind,
  type ExcursionPlanOptions,
  type ExcursionTarget,
  type TargetStatistic,
} from './lib/excursions';
export {
  detectionLine,
  detectionMetrics,
  nearestRank,
  type DetectionCell,
  type DetectionMetrics,
  type DetectionMetricsOptions,
  type ExcursionOutcome,
  type RunOutcome,
} from './lib/detection-metrics';
export {
  EQUIPMENT_EVENT_KINDS,
  EVENT_HORIZON_RUNS,
  equipmentEvents,
  publishedEvent,
  eventLevelSigmas,
  LOOP_FACTOR_CORRELATION,
  runStartSeconds,
  withRealEquipment,
  type ChamberEvent,
  type ClosedLoopGroup,
  type EquipmentEvent,
  type EquipmentEventKind,
  type EquipmentSpec,
} from './lib/real-equipment';
export {
  AFTER_EVENT_RUNS,
  BUDGET_ARL,
  normalCdf,
  oracleBound,
  profileLine,
  profileMetrics,
  shiftsPerRun,
  type ProfileMetrics,
} from './lib/oracle';
export { runIdOf, runIndexOf, schedule, seedChambers } from './lib/simulator';
export { parseCli, type CliOptions } from './lib/cli-options';
