import type { ChamberSpec, FabSpec } from './fab';
import { mix, rng } from './rng';

export const EXCURSION_KINDS = ['mean-shift', 'drift', 'spike', 'variance-burst'] as const;
export type ExcursionKind = (typeof EXCURSION_KINDS)[number];

/**
 * An injected fault, the ground truth the detection summary is scored against. Runs are 0-based
 * indexes of the chamber's runs in this simulation.
 */
export interface Excursion {
  readonly id: string;
  readonly chamber: string;
  readonly toolId: string;
  readonly chamberId: string;
  readonly svid: string;
  readonly kind: ExcursionKind;
  readonly startRun: number;
  /** Last affected run (inclusive). */
  readonly endRun: number;
  /**
   * `mean-shift`, `spike`: offset of the SVID's level in run sigmas; `drift`: added run sigmas per
   * run (the offset of run `startRun + i` is `(i + 1) x magnitude`); `variance-burst`: factor on
   * the within-run noise.
   */
  readonly magnitude: number;
  readonly description: string;
}

/** Length (runs) and default magnitude of each kind. */
export const EXCURSION_SHAPES: Readonly<Record<ExcursionKind, { runs: number; magnitude: number; what: string }>> = {
  'mean-shift': { runs: 6, magnitude: 3.5, what: 'level steps up by {m} run-sigma for {n} runs' },
  drift: { runs: 10, magnitude: 0.5, what: 'level drifts up by {m} run-sigma per run for {n} runs' },
  spike: { runs: 1, magnitude: 7, what: 'one run {m} run-sigma off' },
  'variance-burst': { runs: 4, magnitude: 3, what: 'within-run noise x{m} for {n} runs' },
};

export interface ExcursionPlanOptions {
  /** Excursions to inject (at most one per chamber). */
  readonly count: number;
  readonly kinds?: readonly ExcursionKind[];
  /** First run index an excursion may start at: after Phase I (20 runs) and some in-control runs. */
  readonly afterRun: number;
  readonly runsPerChamber: number;
  readonly seed: number;
}

/**
 * Picks `count` distinct chambers and gives each one excursion on one of its sensors, kinds in turn,
 * starting at a random run in `[afterRun, runsPerChamber - length]`. Fewer are planned when the runs
 * cannot hold them (the caller reports it).
 */
export function planExcursions(fab: FabSpec, opts: ExcursionPlanOptions): Excursion[] {
  const wanted = opts.kinds && opts.kinds.length > 0 ? opts.kinds : EXCURSION_KINDS;
  // Only kinds whose runs fit between afterRun and the last run.
  const kinds = wanted.filter((k) => opts.runsPerChamber - EXCURSION_SHAPES[k].runs >= opts.afterRun);
  const u = rng(mix(opts.seed, 0xe7c));
  const order = fab.chambers.map((c) => c.index).sort(() => u() - 0.5);
  const out: Excursion[] = [];
  for (const idx of order) {
    if (out.length >= opts.count || kinds.length === 0) break;
    const ch = fab.chambers[idx];
    const kind = kinds[out.length % kinds.length];
    if (!ch || !kind || ch.sensors.length === 0) continue;
    const shape = EXCURSION_SHAPES[kind];
    const latest = opts.runsPerChamber - shape.runs;
    const startRun = opts.afterRun + Math.floor(u() * (latest - opts.afterRun + 1));
    const sensor = ch.sensors[Math.floor(u() * ch.sensors.length)];
    if (!sensor) continue;
    out.push({
      id: `x${out.length + 1}`,
      chamber: ch.key,
      toolId: ch.toolId,
      chamberId: ch.chamberId,
      svid: sensor.name,
      kind,
      startRun,
      endRun: startRun + shape.runs - 1,
      magnitude: shape.magnitude,
      description: shape.what.replace('{m}', String(shape.magnitude)).replace('{n}', String(shape.runs)),
    });
  }
  return out;
}

/** What an excursion does to one sensor in one run. */
export interface SensorEffect {
  /** Added to the level, in run sigmas. */
  readonly offsetSigmas: number;
  /** Factor on the within-run noise. */
  readonly noiseFactor: number;
}

/** The effects of `excursions` (of one chamber) on run `runIndex`, by sensor name (absent: none). */
export function effectsFor(excursions: readonly Excursion[], runIndex: number): Map<string, SensorEffect> {
  const out = new Map<string, SensorEffect>();
  for (const x of excursions) {
    if (runIndex < x.startRun || runIndex > x.endRun) continue;
    const prev = out.get(x.svid) ?? { offsetSigmas: 0, noiseFactor: 1 };
    switch (x.kind) {
      case 'mean-shift':
      case 'spike':
        out.set(x.svid, { ...prev, offsetSigmas: prev.offsetSigmas + x.magnitude });
        break;
      case 'drift':
        out.set(x.svid, { ...prev, offsetSigmas: prev.offsetSigmas + (runIndex - x.startRun + 1) * x.magnitude });
        break;
      case 'variance-burst':
        out.set(x.svid, { ...prev, noiseFactor: prev.noiseFactor * x.magnitude });
        break;
    }
  }
  return out;
}

/** Excursions grouped by chamber key. */
export function byChamber(excursions: readonly Excursion[]): Map<string, Excursion[]> {
  const m = new Map<string, Excursion[]>();
  for (const x of excursions) m.set(x.chamber, [...(m.get(x.chamber) ?? []), x]);
  return m;
}

/** Parses `mean-shift,drift`; throws on an unknown kind. */
export function parseKinds(text: string): ExcursionKind[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((k) => {
      if (!(EXCURSION_KINDS as readonly string[]).includes(k)) throw new RangeError(`unknown excursion kind "${k}" (${EXCURSION_KINDS.join(', ')})`);
      return k as ExcursionKind;
    });
}

/** The chamber of an excursion. */
export function chamberOf(fab: FabSpec, x: Excursion): ChamberSpec | undefined {
  return fab.chambers.find((c) => c.key === x.chamber);
}
