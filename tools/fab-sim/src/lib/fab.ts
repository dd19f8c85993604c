import { withRealEquipment, type EquipmentSpec } from './real-equipment';
import { Gaussian, intIn, mix, pick, rng, type Rng } from './rng';

/** A recipe step: its share of the run's context, and how it behaves. */
export interface StepSpec {
  readonly name: string;
  /** Nominal fraction of the context, (0, 1); a recipe's fractions add up to 1. */
  readonly fraction: number;
  /**
   * A ramp step (heat-up, pump-down, fill, beam ramp): every sensor moves linearly from the value it
   * had at the end of the previous step (for the first step: the last step's level, where the tool
   * idles between runs) to this step's level over the whole step, so the step has a "ramp slope".
   */
  readonly ramp?: boolean;
  /**
   * Endpoint-controlled step (optical/motor-current endpoint, dose, pump-down to base pressure):
   * its duration varies from run to run with this relative standard deviation (0.02 = 2 % of its
   * nominal length); later steps move with it, so the run's length varies slightly too.
   */
  readonly durationSd?: number;
}

export interface RecipeSpec {
  readonly name: string;
  readonly steps: readonly StepSpec[];
}

/** How a sensor's within-run noise is distributed. */
export type NoiseKind = 'gaussian' | 'skewed' | 'quantised';

/** One slowly varying term of a sensor's level: `sigmas x runSigma x sin(2 pi runIndex / periodRuns + phase)`. */
export interface WanderTerm {
  readonly sigmas: number;
  readonly periodRuns: number;
  readonly phase: number;
}

/**
 * An analog sensor SVID: its level per recipe step, the run-to-run variation of its level
 * (`runSigma`: the independent run-to-run part; PM ageing and a slow wander come on top) and the
 * sample noise within a run (`noiseSigma`, what the U-chart of its standard deviation sees).
 */
export interface SensorSpec {
  readonly name: string;
  readonly unit: string;
  readonly stepLevels: readonly number[];
  readonly runSigma: number;
  readonly noiseSigma: number;
  /**
   * Envelope time constant of the response to a step change, seconds: a second-order (damped)
   * response `level + (start - level) e^(-t/tau) (cos wd t + zeta / sqrt(1 - zeta^2) sin wd t)`.
   */
  readonly settleSeconds: number;
  /** Damping ratio zeta of that response, (0, 1): the overshoot is `exp(-pi zeta / sqrt(1 - zeta^2))` of the step. */
  readonly damping: number;
  readonly noiseKind: NoiseKind;
  /**
   * `skewed`: the noise is a centred lognormal `(e^(s z) - e^(s^2/2)) / sd` scaled to `noiseSigma`
   * with `s = |skew|`; a negative value mirrors it (a long tail downwards).
   */
  readonly skew?: number;
  /** `quantised`: every sample is rounded to a multiple of this (an A/D or display resolution, 0.5-1 noise sigma). */
  readonly resolution?: number;
  /**
   * `real-equipment`: the sensor's reading range, applied after the quantisation (a reflected-power
   * reading that cannot go below 0 and saturates at 1 W, a state with levels 0-4).
   */
  readonly range?: readonly [number, number];
  /**
   * `real-equipment`: `held` (a controller holds it at its setpoint: events and closed-loop faults do not
   * move it), `reacting` (moves with its closed-loop group), `state` (a few-level state). Absent: analog.
   */
  readonly role?: 'held' | 'reacting' | 'state';
  /** Probability per sample of a normal single-sample glitch (4-8 noise sigma, either sign); 0 on most sensors. */
  readonly glitchRate: number;
  /**
   * Tool ageing: the level drifts smoothly by this many run sigmas (signed) over a PM cycle and steps
   * back at each PM; `ageingCurvature` 0 is linear, larger values age faster early in the cycle.
   */
  readonly ageingSigmas: number;
  readonly ageingCurvature: number;
  /** A slowly varying component (two low-frequency sinusoids in the run index), so consecutive runs correlate. */
  readonly wander: readonly WanderTerm[];
}

/**
 * One process chamber. Of its `svidCount` SVIDs the first `sensors.length` are analog sensors; the
 * rest are setpoints and states, constant within a recipe step (as on a real tool, most SVIDs are):
 * their U-charts show no variation, so the default strategy sets no limits on them.
 */
export interface ChamberSpec {
  readonly toolId: string;
  readonly chamberId: string;
  /** `<toolId>:<chamberId>` */
  readonly key: string;
  readonly toolType: string;
  /** Position in the fab (stable: seeds the chamber's random streams). */
  readonly index: number;
  readonly svidCount: number;
  readonly collectionFreqHz: number;
  readonly contextDurationSeconds: number;
  /** `svidCount x collectionFreqHz x contextDurationSeconds`: samples of one run. */
  readonly weight: number;
  readonly recipe: RecipeSpec;
  readonly sensors: readonly SensorSpec[];
  /** Load, pump-down and transfer time between runs, seconds (a range; drawn per run). */
  readonly overheadSeconds: readonly [number, number];
  readonly seed: number;
  /** The fab profile the chamber was generated with. */
  readonly profile: FabProfile;
  /** Runs between preventive maintenances (150-400). */
  readonly pmIntervalRuns: number;
  /** Run 0 is run `pmOffsetRuns` of a PM cycle (`[0, pmIntervalRuns)`), so chambers are not in step. */
  readonly pmOffsetRuns: number;
  /**
   * Two sensors whose run-level offsets share a common factor (correlation `pairCorrelation`,
   * 0.85-0.95, as does their sample noise; their PM ageing and wander move together as well), e.g.
   * RF power and DC bias. Present on every chamber with at least two sensors.
   */
  readonly correlatedPair?: readonly [string, string];
  readonly pairCorrelation?: number;
  /** `real-equipment` profile: equipment events and closed-loop groups (see real-equipment.ts). */
  readonly equipment?: EquipmentSpec;
}

export interface ToolSpec {
  readonly toolId: string;
  readonly type: string;
  readonly chambers: readonly ChamberSpec[];
}

/**
 * `fab`: the whole fab's chambers (50-200 SVIDs, 1-10 Hz, 600-1,800 s: the weights of design.md
 * section 2). `detection`: the same tool types and realism in small traces for library-level
 * detection benches (1-2 Hz, 180-420 s, 3-5 sensors and 4-10 setpoints/states per chamber).
 * `real-equipment`: the `detection` chambers of the same seed plus lattice sensors, equipment events,
 * production periods, stronger ageing and a closed-loop group (real-equipment.ts).
 */
export type FabProfile = 'fab' | 'detection' | 'real-equipment';

export interface FabSpec {
  readonly seed: number;
  readonly profile?: FabProfile;
  readonly tools: readonly ToolSpec[];
  readonly chambers: readonly ChamberSpec[];
}

interface SensorTemplate {
  readonly name: string;
  readonly unit: string;
  readonly level: number;
}

interface ToolProfile {
  readonly type: string;
  /** Relative share of the fab's tools. */
  readonly share: number;
  /** Chambers per tool: 1..4 with these weights. */
  readonly chamberWeights: readonly [number, number, number, number];
  readonly svids: readonly [number, number];
  readonly freqHz: readonly number[];
  readonly freqWeights: readonly number[];
  /** Context duration range, seconds (multiples of 60). */
  readonly durationSeconds: readonly [number, number];
  readonly sensors: readonly SensorTemplate[];
  readonly recipes: readonly string[];
  readonly steps: readonly StepSpec[];
  readonly overheadSeconds: readonly [number, number];
  /** Sensor pairs that share a common run-to-run factor, in order of preference. */
  readonly pairs: readonly (readonly [string, string])[];
}

/** Relative run-to-run standard deviation of an endpoint-controlled step's duration. */
export const ENDPOINT_SD = 0.02;

/**
 * Tool types of a logic fab: etch and deposition chambers collect many SVIDs at high rates (the
 * heavy tail of the weight distribution), furnaces and wet benches few at 1 Hz.
 */
export const TOOL_PROFILES: readonly ToolProfile[] = [
  {
    type: 'ETCH',
    share: 0.24,
    chamberWeights: [0, 1, 3, 4],
    svids: [100, 200],
    freqHz: [2, 5, 10],
    freqWeights: [0.3, 0.45, 0.25],
    durationSeconds: [600, 1800],
    sensors: [
      { name: 'ChamberPressure', unit: 'mTorr', level: 40 },
      { name: 'RFForwardPower', unit: 'W', level: 1200 },
      { name: 'RFReflectedPower', unit: 'W', level: 12 },
      { name: 'DCBias', unit: 'V', level: 350 },
      { name: 'ESCTemperature', unit: 'degC', level: 60 },
      { name: 'HeBacksideFlow', unit: 'sccm', level: 15 },
    ],
    recipes: ['ETCH-OX', 'ETCH-POLY', 'ETCH-MTL', 'ETCH-SIN'],
    steps: [
      { name: 'Stabilize', fraction: 0.08 },
      { name: 'Ignite', fraction: 0.04, ramp: true },
      { name: 'MainEtch', fraction: 0.58, durationSd: ENDPOINT_SD },
      { name: 'OverEtch', fraction: 0.2 },
      { name: 'Purge', fraction: 0.1 },
    ],
    overheadSeconds: [60, 180],
    pairs: [['RFForwardPower', 'DCBias'], ['ChamberPressure', 'HeBacksideFlow'], ['RFForwardPower', 'RFReflectedPower']],
  },
  {
    type: 'CVD',
    share: 0.14,
    chamberWeights: [0, 2, 3, 3],
    svids: [80, 150],
    freqHz: [1, 2, 5],
    freqWeights: [0.3, 0.45, 0.25],
    durationSeconds: [900, 1800],
    sensors: [
      { name: 'ChamberPressure', unit: 'Torr', level: 4 },
      { name: 'HeaterTemperature', unit: 'degC', level: 400 },
      { name: 'SiH4Flow', unit: 'sccm', level: 250 },
      { name: 'RFPower', unit: 'W', level: 600 },
      { name: 'ShowerheadTemperature', unit: 'degC', level: 180 },
    ],
    recipes: ['CVD-TEOS', 'CVD-SIN', 'CVD-ARC'],
    steps: [
      { name: 'PumpDown', fraction: 0.1, durationSd: ENDPOINT_SD },
      { name: 'Heat', fraction: 0.15, ramp: true },
      { name: 'Deposit', fraction: 0.6 },
      { name: 'Purge', fraction: 0.15 },
    ],
    overheadSeconds: [90, 240],
    pairs: [['ChamberPressure', 'SiH4Flow'], ['HeaterTemperature', 'ShowerheadTemperature'], ['RFPower', 'ChamberPressure']],
  },
  {
    type: 'PVD',
    share: 0.1,
    chamberWeights: [0, 2, 3, 3],
    svids: [60, 120],
    freqHz: [1, 2],
    freqWeights: [0.5, 0.5],
    durationSeconds: [600, 1200],
    sensors: [
      { name: 'ChamberPressure', unit: 'mTorr', level: 3 },
      { name: 'DCPower', unit: 'kW', level: 20 },
      { name: 'ArFlow', unit: 'sccm', level: 40 },
      { name: 'TargetVoltage', unit: 'V', level: 480 },
    ],
    recipes: ['PVD-TI', 'PVD-TIN', 'PVD-AL'],
    steps: [
      { name: 'PumpDown', fraction: 0.15, ramp: true, durationSd: ENDPOINT_SD },
      { name: 'Preclean', fraction: 0.2 },
      { name: 'Sputter', fraction: 0.5 },
      { name: 'Cool', fraction: 0.15 },
    ],
    overheadSeconds: [60, 150],
    pairs: [['DCPower', 'TargetVoltage'], ['ChamberPressure', 'ArFlow']],
  },
  {
    type: 'LITHO',
    share: 0.1,
    chamberWeights: [1, 0, 0, 0],
    svids: [120, 200],
    freqHz: [1, 2, 5],
    freqWeights: [0.3, 0.4, 0.3],
    durationSeconds: [600, 900],
    sensors: [
      { name: 'StageTemperature', unit: 'degC', level: 22 },
      { name: 'LensPressure', unit: 'kPa', level: 101 },
      { name: 'DoseEnergy', unit: 'mJ/cm2', level: 30 },
      { name: 'FocusOffset', unit: 'nm', level: 50 },
    ],
    recipes: ['LITHO-GATE', 'LITHO-M1', 'LITHO-VIA'],
    steps: [
      { name: 'Align', fraction: 0.2, durationSd: ENDPOINT_SD },
      { name: 'Expose', fraction: 0.7 },
      { name: 'Unload', fraction: 0.1, ramp: true },
    ],
    overheadSeconds: [30, 90],
    pairs: [['StageTemperature', 'FocusOffset'], ['LensPressure', 'FocusOffset'], ['DoseEnergy', 'StageTemperature']],
  },
  {
    type: 'IMPLANT',
    share: 0.08,
    chamberWeights: [1, 0, 0, 0],
    svids: [80, 160],
    freqHz: [1, 2, 5],
    freqWeights: [0.5, 0.3, 0.2],
    durationSeconds: [600, 1200],
    sensors: [
      { name: 'BeamCurrent', unit: 'mA', level: 8 },
      { name: 'ExtractionVoltage', unit: 'kV', level: 40 },
      { name: 'SourcePressure', unit: 'uTorr', level: 9 },
    ],
    recipes: ['IMP-BF2', 'IMP-AS', 'IMP-P'],
    steps: [
      { name: 'BeamSetup', fraction: 0.2, ramp: true },
      { name: 'Implant', fraction: 0.7, durationSd: ENDPOINT_SD },
      { name: 'Vent', fraction: 0.1 },
    ],
    overheadSeconds: [60, 180],
    pairs: [['BeamCurrent', 'SourcePressure'], ['BeamCurrent', 'ExtractionVoltage']],
  },
  {
    type: 'DIFF',
    share: 0.08,
    chamberWeights: [3, 1, 0, 0],
    svids: [50, 80],
    freqHz: [1],
    freqWeights: [1],
    durationSeconds: [1200, 1800],
    sensors: [
      { name: 'ZoneTemperature1', unit: 'degC', level: 850 },
      { name: 'ZoneTemperature2', unit: 'degC', level: 860 },
      { name: 'O2Flow', unit: 'slm', level: 10 },
      { name: 'TubePressure', unit: 'Torr', level: 760 },
    ],
    recipes: ['DIFF-OX', 'DIFF-ANNEAL'],
    steps: [
      { name: 'Ramp', fraction: 0.25, ramp: true, durationSd: ENDPOINT_SD },
      { name: 'Soak', fraction: 0.5 },
      { name: 'Cool', fraction: 0.25, ramp: true },
    ],
    overheadSeconds: [120, 300],
    pairs: [['ZoneTemperature1', 'ZoneTemperature2'], ['O2Flow', 'TubePressure']],
  },
  {
    type: 'CMP',
    share: 0.1,
    chamberWeights: [1, 1, 2, 0],
    svids: [50, 100],
    freqHz: [2, 5, 10],
    freqWeights: [0.4, 0.4, 0.2],
    durationSeconds: [600, 900],
    sensors: [
      { name: 'PlatenTorque', unit: 'Nm', level: 30 },
      { name: 'HeadPressure', unit: 'psi', level: 3 },
      { name: 'SlurryFlow', unit: 'ml/min', level: 200 },
      { name: 'PadTemperature', unit: 'degC', level: 45 },
    ],
    recipes: ['CMP-OX', 'CMP-W', 'CMP-CU'],
    steps: [
      { name: 'Touchdown', fraction: 0.1, ramp: true },
      { name: 'BulkPolish', fraction: 0.6 },
      { name: 'Endpoint', fraction: 0.2, durationSd: ENDPOINT_SD },
      { name: 'Rinse', fraction: 0.1 },
    ],
    overheadSeconds: [30, 120],
    pairs: [['PlatenTorque', 'PadTemperature'], ['HeadPressure', 'PlatenTorque'], ['SlurryFlow', 'PadTemperature']],
  },
  {
    type: 'WET',
    share: 0.16,
    chamberWeights: [2, 1, 1, 2],
    svids: [50, 60],
    freqHz: [1],
    freqWeights: [1],
    durationSeconds: [600, 1200],
    sensors: [
      { name: 'BathTemperature', unit: 'degC', level: 70 },
      { name: 'ChemConcentration', unit: '%', level: 5 },
      { name: 'RecirculationFlow', unit: 'l/min', level: 20 },
    ],
    recipes: ['WET-SC1', 'WET-HF', 'WET-SPM'],
    steps: [
      { name: 'Fill', fraction: 0.15, ramp: true, durationSd: ENDPOINT_SD },
      { name: 'Process', fraction: 0.6 },
      { name: 'Rinse', fraction: 0.15 },
      { name: 'Dry', fraction: 0.1 },
    ],
    overheadSeconds: [60, 180],
    pairs: [['BathTemperature', 'ChemConcentration'], ['RecirculationFlow', 'BathTemperature']],
  },
];

/** Weight bounds of design.md section 2. */
export const MIN_WEIGHT = 30_000;
export const MAX_WEIGHT = 3_600_000;

/** Named fab sizes (tools); a real fab has 1,500-2,000 tools. */
export const FAB_SIZES: Readonly<Record<string, number>> = { tiny: 4, small: 20, medium: 100, large: 500, fab: 1600 };

export interface FabOptions {
  /** Number of tools (>= 1). */
  readonly tools: number;
  readonly seed: number;
  /**
   * Analog sensors per chamber: [min, max] (default [2, 4] for `fab`, [3, 5] for `detection`; at most
   * the tool type's sensors); the rest of the SVIDs are setpoints and states.
   */
  readonly sensorsPerChamber?: readonly [number, number];
  /** Default `fab`. See {@link FabProfile}. */
  readonly profile?: FabProfile;
}

// A module-level reference skips a global lookup per call (slow where code runs in a vm context, as under Jest).
const { round } = Math;

function roundTo(x: number, digits: number): number {
  const f = 10 ** digits;
  return round(x * f) / f;
}

function recipeFor(u: Rng, p: ToolProfile): RecipeSpec {
  const base = pick(u, p.recipes);
  const variant = String.fromCharCode(65 + intIn(u, 0, 2));
  // Each recipe variant stretches its steps a little (fractions still add up to 1).
  const raw = p.steps.map((s) => s.fraction * (0.85 + 0.3 * u()));
  const total = raw.reduce((a, b) => a + b, 0);
  return { name: `${base}-${variant}`, steps: p.steps.map((s, i) => ({ ...s, fraction: (raw[i] ?? 0) / total })) };
}

/** The level, spread and settling of a sensor (the draws of the original model, in its order). */
function sensorBase(u: Rng, t: SensorTemplate, steps: number): Pick<SensorSpec, 'name' | 'unit' | 'stepLevels' | 'runSigma' | 'noiseSigma' | 'settleSeconds'> {
  const level = t.level * (0.8 + 0.4 * u());
  // Levels per step: the process step runs at the nominal level, the others lower or higher.
  const stepLevels = Array.from({ length: steps }, () => roundTo(level * (0.3 + 0.9 * u()), 4));
  return {
    name: t.name,
    unit: t.unit,
    stepLevels,
    runSigma: roundTo(level * (0.003 + 0.004 * u()), 6),
    noiseSigma: roundTo(level * (0.006 + 0.01 * u()), 6),
    settleSeconds: roundTo(2 + 6 * u(), 2),
  };
}

/** A "round" resolution (1, 2, 2.5 or 5 x 10^k) in [hi / 2, hi]: there is always one, sometimes two. */
function niceResolution(r: Rng, hi: number): number {
  const p = 10 ** Math.floor(Math.log10(hi));
  const out = [0.5, 1, 2, 2.5, 5].map((m) => m * p).filter((v) => v >= hi / 2 && v <= hi * (1 + 1e-12));
  return Number((out.length > 0 ? pick(r, out) : hi).toPrecision(6));
}

/** A sensor's noise, glitches, damping, ageing and wander (from the chamber's own stream). */
function sensorRealism(r: Rng, base: Pick<SensorSpec, 'noiseSigma'>): Omit<SensorSpec, 'name' | 'unit' | 'stepLevels' | 'runSigma' | 'noiseSigma' | 'settleSeconds'> {
  // Every draw is made whatever the outcome, so the stream stays aligned across sensors.
  const damping = roundTo(0.55 + 0.35 * r(), 3);
  const kindDraw = r();
  const skew = roundTo((0.3 + 0.3 * r()) * (r() < 0.75 ? 1 : -1), 3);
  const resolution = niceResolution(r, base.noiseSigma);
  const glitchRate = r() < 0.4 ? 1 / 3000 : 0;
  const ageingSigmas = roundTo((0.5 + r()) * (r() < 0.5 ? -1 : 1), 3);
  const curved = r() < 0.5;
  const curvature = roundTo(0.5 + 2.5 * r(), 3);
  const ageingCurvature = curved ? curvature : 0;
  const wander: WanderTerm[] = [
    { sigmas: roundTo(0.3 + 0.15 * r(), 3), periodRuns: roundTo(40 + 40 * r(), 2), phase: roundTo(2 * Math.PI * r(), 4) },
    { sigmas: roundTo(0.3 + 0.15 * r(), 3), periodRuns: roundTo(120 + 180 * r(), 2), phase: roundTo(2 * Math.PI * r(), 4) },
  ];
  const noiseKind: NoiseKind = kindDraw < 0.5 ? 'gaussian' : kindDraw < 0.75 ? 'skewed' : 'quantised';
  return {
    damping,
    noiseKind,
    ...(noiseKind === 'skewed' ? { skew } : {}),
    ...(noiseKind === 'quantised' ? { resolution } : {}),
    glitchRate,
    ageingSigmas,
    ageingCurvature,
    wander,
  };
}

/**
 * PM cycle, correlated pair and each sensor's realism, drawn from a stream of the chamber's own
 * seed so the main stream (and with it the default profile's SVID counts, rates, durations and
 * weights) is the same as before these were added.
 */
function chamberRealism(
  seed: number,
  p: ToolProfile,
  bases: readonly Pick<SensorSpec, 'name' | 'unit' | 'stepLevels' | 'runSigma' | 'noiseSigma' | 'settleSeconds'>[],
): Pick<ChamberSpec, 'sensors' | 'pmIntervalRuns' | 'pmOffsetRuns' | 'correlatedPair' | 'pairCorrelation'> {
  const r = rng(mix(seed, 0x4ea1));
  const pmIntervalRuns = intIn(r, 150, 400);
  const pmOffsetRuns = intIn(r, 0, pmIntervalRuns - 1);
  const sensors: SensorSpec[] = bases.map((b) => ({ ...b, ...sensorRealism(r, b) }));
  const rho = roundTo(0.85 + 0.1 * r(), 3);
  if (sensors.length < 2) return { sensors, pmIntervalRuns, pmOffsetRuns };
  const names = sensors.map((s) => s.name);
  const pair = p.pairs.find(([a, b]) => names.includes(a) && names.includes(b)) ?? [names[0] as string, names[1] as string];
  // The common factor ages and wanders as one: the second sensor takes the first's slow terms (in its own sigmas).
  const first = sensors[names.indexOf(pair[0])] as SensorSpec;
  const j = names.indexOf(pair[1]);
  sensors[j] = { ...(sensors[j] as SensorSpec), ageingSigmas: first.ageingSigmas, ageingCurvature: first.ageingCurvature, wander: first.wander };
  return { sensors, pmIntervalRuns, pmOffsetRuns, correlatedPair: [pair[0], pair[1]], pairCorrelation: rho };
}

/**
 * Generates a fab: `tools` tools of the {@link TOOL_PROFILES} types (in their shares), each with 1-4
 * chambers, one recipe per chamber (chambers are dedicated, as they usually are), analog sensors and
 * as many setpoints and states as the chamber's SVID count leaves. Deterministic for a seed; the
 * `fab` profile (default) keeps the SVID counts, rates, durations and weights of earlier versions
 * for a seed, the `detection` profile makes small traces of the same tool types (see {@link FabProfile}).
 *
 * @throws RangeError when `tools` is not an integer >= 1.
 */
export function generateFab(opts: FabOptions): FabSpec {
  if (!Number.isInteger(opts.tools) || opts.tools < 1) throw new RangeError(`tools must be an integer >= 1, got ${opts.tools}`);
  const profile: FabProfile = opts.profile ?? 'fab';
  // `real-equipment` draws the `detection` fab (same streams), then adds to each chamber.
  const u = rng(mix(opts.seed, profile === 'fab' ? 0xfab : 0xde7ec7));
  const [sMin, sMax] = opts.sensorsPerChamber ?? (profile === 'fab' ? [2, 4] : [3, 5]);
  const shares = TOOL_PROFILES.map((p) => p.share);
  const counters = new Map<string, number>();
  const tools: ToolSpec[] = [];
  const chambers: ChamberSpec[] = [];
  for (let t = 0; t < opts.tools; t++) {
    // The first tools cover every type once, so even a tiny fab has a mix.
    const p = (opts.tools >= TOOL_PROFILES.length ? TOOL_PROFILES[t] : undefined) ?? pick(u, TOOL_PROFILES, shares);
    const n = (counters.get(p.type) ?? 0) + 1;
    counters.set(p.type, n);
    const toolId = `${p.type}${String(n).padStart(2, '0')}`;
    const count = pick(u, [1, 2, 3, 4], p.chamberWeights);
    const own: ChamberSpec[] = [];
    for (let c = 1; c <= count; c++) {
      let svidCount: number;
      let collectionFreqHz: number;
      let contextDurationSeconds: number;
      let recipe: RecipeSpec;
      let nSensors: number;
      if (profile === 'fab') {
        svidCount = intIn(u, p.svids[0], p.svids[1]);
        collectionFreqHz = pick(u, p.freqHz, p.freqWeights);
        contextDurationSeconds = 60 * intIn(u, p.durationSeconds[0] / 60, p.durationSeconds[1] / 60);
        recipe = recipeFor(u, p);
        nSensors = Math.min(svidCount, intIn(u, Math.min(sMin, p.sensors.length), Math.min(sMax, p.sensors.length)));
      } else {
        nSensors = intIn(u, Math.min(sMin, p.sensors.length), Math.min(sMax, p.sensors.length));
        svidCount = nSensors + intIn(u, 4, 10);
        collectionFreqHz = pick(u, [1, 2]);
        contextDurationSeconds = 30 * intIn(u, 6, 14);
        recipe = recipeFor(u, p);
      }
      const product = svidCount * collectionFreqHz * contextDurationSeconds;
      // The fab's weights stay within design.md's bounds; the detection profile's small traces are below them.
      const weight = profile === 'fab' ? Math.min(MAX_WEIGHT, Math.max(MIN_WEIGHT, product)) : product;
      const templates = [...p.sensors].sort(() => u() - 0.5).slice(0, nSensors);
      const bases = templates.map((tpl) => sensorBase(u, tpl, recipe.steps.length));
      const chamberId = `PM${c}`;
      const seed = mix(opts.seed, chambers.length, profile === 'fab' ? 0xc4a : 0xc4b);
      let ch: ChamberSpec = {
        toolId,
        chamberId,
        key: `${toolId}:${chamberId}`,
        toolType: p.type,
        index: chambers.length,
        svidCount,
        collectionFreqHz,
        contextDurationSeconds,
        weight,
        recipe,
        overheadSeconds: p.overheadSeconds,
        seed,
        profile,
        ...chamberRealism(seed, p, bases),
      };
      if (profile === 'real-equipment') ch = withRealEquipment(ch);
      own.push(ch);
      chambers.push(ch);
    }
    tools.push({ toolId, type: p.type, chambers: own });
  }
  return { seed: opts.seed, profile, tools, chambers };
}

/**
 * Where run `runIndex` of a chamber falls in its preventive-maintenance cycles: cycle number and
 * runs since the last PM (0 = the first run after a PM). A deterministic function of the run index.
 */
export function pmCycleOf(ch: ChamberSpec, runIndex: number): { cycle: number; runInCycle: number } {
  const x = runIndex + ch.pmOffsetRuns;
  const cycle = Math.floor(x / ch.pmIntervalRuns);
  return { cycle, runInCycle: x - cycle * ch.pmIntervalRuns };
}

/**
 * The slow part of sensor `k`'s level in run `runIndex`, in its run sigmas: PM ageing (0 right after
 * a PM, `ageingSigmas` at the end of a cycle) plus the wander.
 */
export function slowLevelSigmas(ch: ChamberSpec, k: number, runIndex: number): number {
  const s = ch.sensors[k];
  if (!s) return 0;
  const { runInCycle } = pmCycleOf(ch, runIndex);
  const x = runInCycle / Math.max(1, ch.pmIntervalRuns - 1);
  const c = s.ageingCurvature;
  const shape = c > 0 ? (1 - Math.exp(-c * x)) / (1 - Math.exp(-c)) : x;
  let v = s.ageingSigmas * shape;
  for (const w of s.wander) v += w.sigmas * Math.sin((2 * Math.PI * runIndex) / w.periodRuns + w.phase);
  return v;
}

/** Name of SVID `i` of a chamber (sensors first, then setpoints `SP_nnn` and states `ST_nnn`). */
export function svidName(ch: ChamberSpec, i: number): string {
  const sensor = ch.sensors[i];
  if (sensor) return sensor.name;
  const j = i - ch.sensors.length;
  return j % 3 === 2 ? `ST_${String(j).padStart(3, '0')}` : `SP_${String(j).padStart(3, '0')}`;
}

/** Every SVID name of a chamber, in trace order. */
export function svidNames(ch: ChamberSpec): string[] {
  return Array.from({ length: ch.svidCount }, (_, i) => svidName(ch, i));
}

/** Weight statistics of a fab (for the overview). */
export function weightStats(fab: FabSpec): { total: number; min: number; max: number; median: number; p90: number; top10Share: number } {
  const w = fab.chambers.map((c) => c.weight).sort((a, b) => a - b);
  const total = w.reduce((a, b) => a + b, 0);
  const q = (f: number) => w[Math.min(w.length - 1, Math.floor(f * w.length))] ?? 0;
  const top = w.slice(Math.floor(w.length * 0.9)).reduce((a, b) => a + b, 0);
  return { total, min: w[0] ?? 0, max: w[w.length - 1] ?? 0, median: q(0.5), p90: q(0.9), top10Share: total > 0 ? top / total : 0 };
}

/** A gaussian stream for a chamber's run (independent of publication order). */
export function runGaussian(ch: ChamberSpec, runIndex: number, salt = 0): Gaussian {
  return new Gaussian(rng(mix(ch.seed, runIndex, salt)));
}
