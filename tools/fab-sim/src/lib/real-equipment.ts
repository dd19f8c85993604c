/**
 * The `real-equipment` profile: the `detection` profile's chambers plus the properties of real tools
 * that profile lacks (issue 49, item 1). Each choice below names the tool behaviour it stands for.
 *
 * - **Lattice sensors.** A pressure gauge that reports whole counts (99-102), a reflected-power reading
 *   that is 0 or 1 W on a well-matched plasma, a state sensor with a handful of levels (a heater-zone
 *   stage 0-4). One count between runs is many sds of an order statistic of such a sensor.
 * - **Equipment events.** A PM (preventive maintenance: the chamber opened, parts cleaned or swapped,
 *   reassembled), a chamber clean (wet or in-situ clean: the wall condition changes) and a part change
 *   (an edge ring, a showerhead) each shift the levels of a group of physically coupled sensors
 *   together, by 1-3 of their run sds, the group's pattern of signs fixed per chamber and event kind
 *   (after every clean of one chamber the same sensors move the same way relative to each other). A
 *   PM also restarts the ageing (the existing PM-cycle model, here 100-200 runs and 1-3 sds over a
 *   cycle: RF hours and wall deposition accumulate). Between production periods (120-200 runs,
 *   then a long idle of one to four weeks: a product mix or a consumable lot changes) every sensor
 *   the controller does not hold takes a new period mean (0.5-1.5 sds from nominal, either sign).
 *   Shifts accumulate and revert toward nominal (an event's sign is the one that brings its group
 *   back when the group is already off by more than half an sd), as a tool is brought back into
 *   its qualification window.
 * - **Closed-loop groups.** A controller holds one sensor at its setpoint (delivered RF power by the
 *   generator's loop, a gas flow by its MFC); what moves when the physics changes is what the loop
 *   actuates and what reacts: the match's load and tune positions and the load impedance for RF,
 *   the throttle valve position and the MFC's valve drive for gas. In control the reacting sensors
 *   share a common run-to-run factor (plasma load, chamber conductance) with loadings `inControl`; a
 *   closed-loop fault (a generator or MFC calibration error, a leaking valve) moves them along a
 *   different direction `faultGains`, while the held sensor reads its setpoint as before.
 *
 * Everything is drawn from a stream of the chamber's own seed, after the `detection` profile's
 * draws: a `real-equipment` fab has the `detection` fab's tools, chambers, recipes and sensors (with
 * the same seed), plus these.
 */
import type { EquipmentEvent as PublishedEquipmentEvent } from '@defender/contracts';
import type { ChamberSpec, SensorSpec } from './fab';
import { intIn, mix, pick, rng, type Rng } from './rng';

/** Kinds of equipment events the simulator emits. */
export const EQUIPMENT_EVENT_KINDS = ['pm', 'clean', 'part-change', 'long-idle'] as const;
export type EquipmentEventKind = (typeof EQUIPMENT_EVENT_KINDS)[number];

/** One equipment event of a chamber: it happens between run `beforeRun - 1` and run `beforeRun`. */
export interface ChamberEvent {
  readonly beforeRun: number;
  readonly kind: EquipmentEventKind;
  /**
   * The change of each affected sensor's level the event causes, in that sensor's run sds
   * (`SensorSpec.runSigma`); sensors not listed do not move. A PM also restarts the ageing
   * (`pmCycleOf`), which is not listed here.
   */
  readonly shifts: Readonly<Record<string, number>>;
  /** `long-idle`: how long the chamber stood idle before `beforeRun` (seconds: one to four weeks). */
  readonly idleSeconds?: number;
}

/** An event as the simulated output lists it: (chamber, before-run index, kind). */
export interface EquipmentEvent {
  /** `<toolId>:<chamberId>` */
  readonly chamber: string;
  readonly beforeRun: number;
  readonly kind: EquipmentEventKind;
}

/** A sensor held by a controller and the sensors that react when the physics under it changes. */
export interface ClosedLoopGroup {
  readonly name: 'rf' | 'gas';
  /** The sensor the controller holds at its setpoint: a closed-loop fault does not move it. */
  readonly held: string;
  readonly reacting: readonly string[];
  /** Loadings of the reacting sensors on their common in-control factor (in their run sds, |x| <= 1). */
  readonly inControl: readonly number[];
  /** How far each reacting sensor moves per unit of fault, in its run sds (the first of largest size, 1). */
  readonly faultGains: readonly number[];
}

/** What the `real-equipment` profile adds to a chamber. */
export interface EquipmentSpec {
  /** Events in run order, for runs below {@link EVENT_HORIZON_RUNS}. */
  readonly events: readonly ChamberEvent[];
  readonly loops: readonly ClosedLoopGroup[];
}

/** Events are planned for this many runs of each chamber (the benches run 100-400). */
export const EVENT_HORIZON_RUNS = 1000;
/** Correlation of each reacting sensor's run offset with its loop's common factor (times its loading). */
export const LOOP_FACTOR_CORRELATION = 0.8;

const roundTo = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Level of a sensor per step: `level` in the process steps, lower elsewhere (as `sensorBase` does). */
function levels(r: Rng, level: number, steps: number): number[] {
  return Array.from({ length: steps }, () => roundTo(level * (0.3 + 0.9 * r()), 4));
}

/** A sensor with no ageing or wander (the slow terms of a held or state sensor are the controller's). */
function plain(
  name: string,
  unit: string,
  stepLevels: readonly number[],
  runSigma: number,
  noiseSigma: number,
  extra: Partial<SensorSpec> = {},
): SensorSpec {
  return {
    name,
    unit,
    stepLevels,
    runSigma,
    noiseSigma,
    settleSeconds: 3,
    damping: 0.7,
    noiseKind: 'gaussian',
    glitchRate: 0,
    ageingSigmas: 0,
    ageingCurvature: 0,
    wander: [],
    ...extra,
  };
}

/**
 * The lattice sensors: a gauge in whole counts around 100 (noise 0.45 counts, run sd 0.35: readings
 * 99-102), the reflected power of a matched plasma (0 or 1 W: a level of 0.2-0.4 W in the plasma
 * steps, 0 elsewhere, noise 0.35 W, clamped to [0, 1] as a sensor that cannot read below zero and
 * saturates its low range), and a heater-zone stage (an integer 0-4 per step, noise 0.25: now and then
 * one level off).
 */
function latticeSensors(r: Rng, steps: number): SensorSpec[] {
  const base = 100 + r();
  const gauge = plain('ForelinePressure', 'mTorr', Array.from({ length: steps }, () => roundTo(base + 0.6 * (r() - 0.5), 3)), 0.35, 0.45, {
    noiseKind: 'quantised',
    resolution: 1,
    ageingSigmas: roundTo((0.5 + r()) * (r() < 0.5 ? -1 : 1), 3),
  });
  const plasma = Array.from({ length: steps }, () => r() < 0.6);
  const reflected = plain(
    'ReflectedPower',
    'W',
    plasma.map((on) => (on ? roundTo(0.2 + 0.2 * r(), 3) : 0)),
    0.1,
    0.35,
    { noiseKind: 'quantised', resolution: 1, range: [0, 1] },
  );
  const stage = plain('HeaterZoneStage', 'level', Array.from({ length: steps }, () => intIn(r, 0, 4)), 0.05, 0.25, {
    noiseKind: 'quantised',
    resolution: 1,
    range: [0, 4],
    role: 'state',
  });
  return [gauge, reflected, stage];
}

/** A reacting sensor: an analog reading with the realism of the others (ageing, wander), its level per step. */
function reactingSensor(r: Rng, name: string, unit: string, level: number, steps: number): SensorSpec {
  const l = level * (0.8 + 0.4 * r());
  return plain(name, unit, levels(r, l, steps), roundTo(l * (0.004 + 0.004 * r()), 6), roundTo(l * (0.006 + 0.008 * r()), 6), {
    settleSeconds: roundTo(2 + 4 * r(), 2),
    damping: roundTo(0.6 + 0.3 * r(), 3),
    ageingSigmas: roundTo((0.5 + r()) * (r() < 0.5 ? -1 : 1), 3),
    ageingCurvature: 0,
    wander: [{ sigmas: roundTo(0.3 + 0.15 * r(), 3), periodRuns: roundTo(60 + 120 * r(), 2), phase: roundTo(2 * Math.PI * r(), 4) }],
    role: 'reacting',
  });
}

/** One closed-loop group (RF or gas) with its held and reacting sensors. */
function loopGroup(r: Rng, kind: 'rf' | 'gas', steps: number): { group: ClosedLoopGroup; sensors: SensorSpec[] } {
  const heldLevel = kind === 'rf' ? 800 * (0.7 + 0.6 * r()) : 100 * (0.7 + 0.6 * r());
  // The controller holds the reading within a fraction of a percent of its setpoint run after run.
  const held = plain(kind === 'rf' ? 'RFDeliveredPower' : 'ProcessGasFlow', kind === 'rf' ? 'W' : 'sccm', levels(r, heldLevel, steps), roundTo(heldLevel * 0.0005, 6), roundTo(heldLevel * 0.002, 6), {
    role: 'held',
  });
  const reacting =
    kind === 'rf'
      ? [reactingSensor(r, 'MatchLoadPosition', '%', 45, steps), reactingSensor(r, 'MatchTunePosition', '%', 60, steps), reactingSensor(r, 'LoadImpedance', 'ohm', 50, steps)]
      : [reactingSensor(r, 'ThrottleValvePosition', '%', 35, steps), reactingSensor(r, 'MFCValveDrive', 'V', 2.5, steps)];
  const sign = () => (r() < 0.5 ? -1 : 1);
  const inControl = reacting.map(() => roundTo(sign() * (0.5 + 0.5 * r()), 3));
  // The fault direction is drawn apart from the in-control loadings: a calibration error of the held
  // sensor is not the plasma-load variation the chamber shows every run.
  const faultGains = reacting.map((_s, i) => (i === 0 ? sign() : roundTo(sign() * (0.3 + 0.7 * r()), 3)));
  return {
    group: { name: kind, held: held.name, reacting: reacting.map((s) => s.name), inControl, faultGains },
    sensors: [held, ...reacting],
  };
}

/** The overall sign of an event on `group` (pattern `signs`): the one that brings the group back when it is off. */
function revertingSign(r: Rng, group: readonly string[], signs: readonly number[], level: ReadonlyMap<string, number>): 1 | -1 {
  let along = 0;
  group.forEach((n, i) => (along += (signs[i] ?? 1) * (level.get(n) ?? 0)));
  along /= Math.max(1, group.length);
  if (Math.abs(along) > 0.5) return along > 0 ? -1 : 1;
  return r() < 0.5 ? -1 : 1;
}

/** A group of 2-4 of `names` (at least two, fewer when fewer exist) and a fixed sign per member. */
function eventGroup(r: Rng, names: readonly string[], lo: number, hi: number): { group: string[]; signs: number[] } {
  const shuffled = [...names].sort(() => r() - 0.5);
  const group = shuffled.slice(0, Math.min(names.length, intIn(r, lo, hi)));
  return { group, signs: group.map(() => (r() < 0.5 ? -1 : 1)) };
}

/**
 * The events of a chamber over {@link EVENT_HORIZON_RUNS} runs: PMs at its PM-cycle boundaries,
 * cleans every 60-120 runs, part changes every 150-400 runs, production periods of 120-200 runs.
 */
function planEvents(r: Rng, ch: Pick<ChamberSpec, 'pmIntervalRuns' | 'pmOffsetRuns'>, sensors: readonly SensorSpec[]): ChamberEvent[] {
  const movable = sensors.filter((s) => s.role !== 'held' && s.role !== 'state').map((s) => s.name);
  const groups = {
    pm: eventGroup(r, movable, Math.ceil(movable.length / 2), movable.length),
    clean: eventGroup(r, movable, 2, 4),
    'part-change': eventGroup(r, movable, 2, 3),
  };
  const when: { run: number; kind: EquipmentEventKind; order: number }[] = [];
  const firstPm = ch.pmIntervalRuns - ch.pmOffsetRuns;
  for (let x = firstPm; x < EVENT_HORIZON_RUNS; x += ch.pmIntervalRuns) when.push({ run: x, kind: 'pm', order: 0 });
  for (let x = intIn(r, 20, 120); x < EVENT_HORIZON_RUNS; x += intIn(r, 60, 120)) when.push({ run: x, kind: 'clean', order: 1 });
  for (let x = intIn(r, 50, 400); x < EVENT_HORIZON_RUNS; x += intIn(r, 150, 400)) when.push({ run: x, kind: 'part-change', order: 2 });
  for (let x = intIn(r, 60, 200); x < EVENT_HORIZON_RUNS; x += intIn(r, 120, 200)) when.push({ run: x, kind: 'long-idle', order: 3 });
  // Two events before one run stay apart in the list, in a fixed order (PM first).
  when.sort((a, b) => a.run - b.run || a.order - b.order);
  const level = new Map<string, number>();
  const period = new Map<string, number>();
  const out: ChamberEvent[] = [];
  for (const w of when) {
    if (w.run < 1) continue;
    const shifts: Record<string, number> = {};
    let idleSeconds: number | undefined;
    if (w.kind === 'long-idle') {
      for (const n of movable) {
        const next = roundTo((r() < 0.5 ? -1 : 1) * (0.5 + r()), 3);
        shifts[n] = roundTo(next - (period.get(n) ?? 0), 3);
        period.set(n, next);
      }
      idleSeconds = 86_400 * intIn(r, 7, 28);
    } else {
      const { group, signs } = groups[w.kind];
      const d = 1 + 2 * r();
      const s = revertingSign(r, group, signs, level);
      group.forEach((n, i) => {
        // Members move together, each by 0.8-1.2 of the event's size (coupled, not identical), within 1-3 sds.
        const v = roundTo(s * (signs[i] ?? 1) * Math.min(3, Math.max(1, d * (0.8 + 0.4 * r()))), 3);
        shifts[n] = v;
        level.set(n, (level.get(n) ?? 0) + v);
      });
    }
    out.push({ beforeRun: w.run, kind: w.kind, shifts, ...(idleSeconds !== undefined ? { idleSeconds } : {}) });
  }
  return out;
}

/**
 * Adds the `real-equipment` properties to a chamber of the `detection` profile: a shorter PM cycle
 * (100-200 runs) with stronger ageing (x2: 1-3 run sds over a cycle), the lattice sensors, one
 * closed-loop group (RF on plasma tools, gas on the others, drawn), and the chamber's events.
 */
export function withRealEquipment(ch: ChamberSpec): ChamberSpec {
  const r = rng(mix(ch.seed, 0x2ea1));
  const steps = ch.recipe.steps.length;
  const pmIntervalRuns = intIn(r, 100, 200);
  const pmOffsetRuns = intIn(r, 0, pmIntervalRuns - 1);
  const aged = ch.sensors.map((s) => ({ ...s, ageingSigmas: roundTo(2 * s.ageingSigmas, 3) }));
  const plasmaTool = ['ETCH', 'CVD', 'PVD'].includes(ch.toolType);
  const loopKind = pick(r, ['rf', 'gas'] as const, plasmaTool ? [0.7, 0.3] : [0.2, 0.8]);
  const lattice = latticeSensors(r, steps);
  const loop = loopGroup(r, loopKind, steps);
  const sensors = [...aged, ...lattice, ...loop.sensors];
  const events = planEvents(r, { pmIntervalRuns, pmOffsetRuns }, sensors);
  const added = lattice.length + loop.sensors.length;
  const svidCount = ch.svidCount + added;
  return {
    ...ch,
    svidCount,
    weight: svidCount * ch.collectionFreqHz * ch.contextDurationSeconds,
    sensors,
    pmIntervalRuns,
    pmOffsetRuns,
    equipment: { events, loops: [loop.group] },
  };
}

/** The level shift of sensor `name` in run `runIndex` from the events before it, in its run sds. */
export function eventLevelSigmas(ch: ChamberSpec, name: string, runIndex: number): number {
  const events = ch.equipment?.events;
  if (!events) return 0;
  let v = 0;
  for (const e of events) {
    if (e.beforeRun > runIndex) break;
    v += e.shifts[name] ?? 0;
  }
  return v;
}

/**
 * The event as the equipment side publishes it (contracts `EquipmentEvent`, ADR 0019): `eventId` its
 * idempotency key, `at` when it happened on the tool. A part change names a simulated part; a long
 * idle says how long.
 */
export function publishedEvent(ch: Pick<ChamberSpec, 'toolId' | 'chamberId'>, e: ChamberEvent, eventId: string, at: Date): PublishedEquipmentEvent {
  return {
    schema: 1,
    toolId: ch.toolId,
    chamberId: ch.chamberId,
    eventId,
    kind: e.kind,
    at: at.toISOString(),
    author: 'fab-sim',
    ...(e.kind === 'part-change' ? { parts: ['simulated part'] } : {}),
    ...(e.kind === 'long-idle' ? { idleSeconds: Math.max(1, Math.round(e.idleSeconds ?? 1)) } : {}),
  };
}

/** Every equipment event of a fab's chambers before run `runs`, in (chamber, run) order. */
export function equipmentEvents(chambers: readonly ChamberSpec[], runs: number): EquipmentEvent[] {
  const out: EquipmentEvent[] = [];
  for (const ch of chambers) {
    for (const e of ch.equipment?.events ?? []) if (e.beforeRun < runs) out.push({ chamber: ch.key, beforeRun: e.beforeRun, kind: e.kind });
  }
  return out;
}

/**
 * Start of run `runIndex` (epoch seconds) on a chamber whose runs follow each other every
 * `spacingSeconds`, plus every long idle before it (production periods weeks apart).
 */
export function runStartSeconds(ch: ChamberSpec, runIndex: number, t0: number, spacingSeconds: number): number {
  let idle = 0;
  for (const e of ch.equipment?.events ?? []) {
    if (e.beforeRun > runIndex) break;
    idle += e.idleSeconds ?? 0;
  }
  return t0 + runIndex * spacingSeconds + idle;
}
