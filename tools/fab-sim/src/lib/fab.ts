import { Gaussian, intIn, mix, pick, rng, type Rng } from './rng';

/** A recipe step: its share of the run's context. */
export interface StepSpec {
  readonly name: string;
  /** Fraction of the context, (0, 1); a recipe's fractions add up to 1. */
  readonly fraction: number;
}

export interface RecipeSpec {
  readonly name: string;
  readonly steps: readonly StepSpec[];
}

/**
 * An analog sensor SVID: its level per recipe step, the run-to-run variation of its level
 * (`runSigma`, what the U-chart of its mean sees) and the sample noise within a run (`noiseSigma`,
 * what the U-chart of its standard deviation sees).
 */
export interface SensorSpec {
  readonly name: string;
  readonly unit: string;
  readonly stepLevels: readonly number[];
  readonly runSigma: number;
  readonly noiseSigma: number;
  /** Settling time constant after a step change, seconds. */
  readonly settleSeconds: number;
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
}

export interface ToolSpec {
  readonly toolId: string;
  readonly type: string;
  readonly chambers: readonly ChamberSpec[];
}

export interface FabSpec {
  readonly seed: number;
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
}

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
      { name: 'Ignite', fraction: 0.04 },
      { name: 'MainEtch', fraction: 0.58 },
      { name: 'OverEtch', fraction: 0.2 },
      { name: 'Purge', fraction: 0.1 },
    ],
    overheadSeconds: [60, 180],
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
      { name: 'PumpDown', fraction: 0.1 },
      { name: 'Heat', fraction: 0.15 },
      { name: 'Deposit', fraction: 0.6 },
      { name: 'Purge', fraction: 0.15 },
    ],
    overheadSeconds: [90, 240],
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
      { name: 'PumpDown', fraction: 0.15 },
      { name: 'Preclean', fraction: 0.2 },
      { name: 'Sputter', fraction: 0.5 },
      { name: 'Cool', fraction: 0.15 },
    ],
    overheadSeconds: [60, 150],
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
      { name: 'Align', fraction: 0.2 },
      { name: 'Expose', fraction: 0.7 },
      { name: 'Unload', fraction: 0.1 },
    ],
    overheadSeconds: [30, 90],
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
      { name: 'BeamSetup', fraction: 0.2 },
      { name: 'Implant', fraction: 0.7 },
      { name: 'Vent', fraction: 0.1 },
    ],
    overheadSeconds: [60, 180],
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
      { name: 'Ramp', fraction: 0.25 },
      { name: 'Soak', fraction: 0.5 },
      { name: 'Cool', fraction: 0.25 },
    ],
    overheadSeconds: [120, 300],
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
      { name: 'Touchdown', fraction: 0.1 },
      { name: 'BulkPolish', fraction: 0.6 },
      { name: 'Endpoint', fraction: 0.2 },
      { name: 'Rinse', fraction: 0.1 },
    ],
    overheadSeconds: [30, 120],
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
      { name: 'Fill', fraction: 0.15 },
      { name: 'Process', fraction: 0.6 },
      { name: 'Rinse', fraction: 0.15 },
      { name: 'Dry', fraction: 0.1 },
    ],
    overheadSeconds: [60, 180],
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
  /** Analog sensors per chamber: [min, max] (default [2, 4]); the rest of the SVIDs are setpoints and states. */
  readonly sensorsPerChamber?: readonly [number, number];
}

function roundTo(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function recipeFor(u: Rng, p: ToolProfile): RecipeSpec {
  const base = pick(u, p.recipes);
  const variant = String.fromCharCode(65 + intIn(u, 0, 2));
  // Each recipe variant stretches its steps a little (fractions still add up to 1).
  const raw = p.steps.map((s) => s.fraction * (0.85 + 0.3 * u()));
  const total = raw.reduce((a, b) => a + b, 0);
  return { name: `${base}-${variant}`, steps: p.steps.map((s, i) => ({ name: s.name, fraction: (raw[i] ?? 0) / total })) };
}

function sensorFor(u: Rng, t: SensorTemplate, steps: number): SensorSpec {
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

/**
 * Generates a fab: `tools` tools of the {@link TOOL_PROFILES} types (in their shares), each with 1-4
 * chambers, one recipe per chamber (chambers are dedicated, as they usually are), 2-4 analog sensors
 * and as many setpoints and states as the chamber's SVID count leaves. Deterministic for a seed.
 */
export function generateFab(opts: FabOptions): FabSpec {
  if (!Number.isInteger(opts.tools) || opts.tools < 1) throw new RangeError(`tools must be an integer >= 1, got ${opts.tools}`);
  const u = rng(mix(opts.seed, 0xfab));
  const [sMin, sMax] = opts.sensorsPerChamber ?? [2, 4];
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
      const svidCount = intIn(u, p.svids[0], p.svids[1]);
      const collectionFreqHz = pick(u, p.freqHz, p.freqWeights);
      const contextDurationSeconds = 60 * intIn(u, p.durationSeconds[0] / 60, p.durationSeconds[1] / 60);
      const weight = Math.min(MAX_WEIGHT, Math.max(MIN_WEIGHT, svidCount * collectionFreqHz * contextDurationSeconds));
      const recipe = recipeFor(u, p);
      const nSensors = Math.min(svidCount, intIn(u, Math.min(sMin, p.sensors.length), Math.min(sMax, p.sensors.length)));
      const templates = [...p.sensors].sort(() => u() - 0.5).slice(0, nSensors);
      const chamberId = `PM${c}`;
      const ch: ChamberSpec = {
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
        sensors: templates.map((tpl) => sensorFor(u, tpl, recipe.steps.length)),
        overheadSeconds: p.overheadSeconds,
        seed: mix(opts.seed, chambers.length, 0xc4a),
      };
      own.push(ch);
      chambers.push(ch);
    }
    tools.push({ toolId, type: p.type, chambers: own });
  }
  return { seed: opts.seed, tools, chambers };
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
