import type { RunNotification, TraceRecord } from '@defender/contracts';
import { gauss, rng } from '@defender/infra-harness';

/** A chamber seeded into chamber_metadata (weight = svids x Hz x seconds of context). */
export interface SeedChamber {
  readonly toolId: string;
  readonly chamberId: string;
  readonly svidCount: number;
  readonly collectionFreqHz: number;
  readonly contextDurationSeconds: number;
}

export const chamberKeyOf = (c: { toolId: string; chamberId: string }): string => `${c.toolId}:${c.chamberId}`;

export function weightOf(c: SeedChamber): number {
  return c.svidCount * c.collectionFreqHz * c.contextDurationSeconds;
}


/**
 * `n` chambers over tools of 1-4 chambers with the fab's weight spread (30 K to 3.6 M), seeded.
 * The weights drive the assignment; the traces the publisher writes are small (see {@link makeTrace}).
 */
export function fabChambers(n: number, seed = 1): SeedChamber[] {
  const u = rng(seed);
  const svids = [50, 100, 150, 200] as const;
  const freqs = [1, 2, 5, 10] as const;
  const durations = [600, 900, 1200, 1800] as const;
  const of = <T>(xs: readonly [T, T, T, T], x: number): T => xs[Math.min(3, Math.floor(x * 4)) as 0 | 1 | 2 | 3];
  const out: SeedChamber[] = [];
  for (let tool = 1; out.length < n; tool++) {
    const perTool = 1 + Math.floor(u() * 4);
    for (let c = 1; c <= perTool && out.length < n; c++) {
      out.push({
        toolId: `tool${String(tool).padStart(3, '0')}`,
        chamberId: `ch${c}`,
        svidCount: of(svids, u()),
        collectionFreqHz: of(freqs, u() ** 2),
        contextDurationSeconds: of(durations, u()),
      });
    }
  }
  return out;
}

export const SVIDS = ['pressure', 'rf_power'] as const;
export const RECIPE = 'ETCH-A';

/**
 * The defense strategy the chaos runs store for every chamber: the mean of every SVID on an
 * individuals chart with WE1, a short Phase I (5 runs) so that alarms (and escalation holds) start
 * within seconds of a scenario, and the default escalation (2 alarmed runs in 5 -> HOLD).
 */
export function chaosStrategy(chamberKey: string) {
  return {
    schemaVersion: 1,
    name: `chaos-${chamberKey}`,
    scope: { chamber: chamberKey },
    indicators: [{ id: 'mean', svid: '*', statistic: 'mean', rules: ['WE1'], baseline: { minRuns: 5, exclusion: false } }],
    escalation: [{ alarms: 2, withinRuns: 5, action: 'HOLD_CHAMBER' }],
  };
}

/** What one published run looks like. */
export interface RunSpec {
  readonly chamber: SeedChamber;
  /** 0-based run index within the chamber. */
  readonly index: number;
  readonly runId: string;
  /** Samples per SVID (the trace is a decimated stand-in for the real one). */
  readonly samples: number;
  /** Added to every sample: an excursion that the WE1 rule flags. */
  readonly shift: number;
  /** Simulated start of the context, epoch ms. */
  readonly startMs: number;
  readonly seed: number;
}

/** A run's trace: per SVID level 100 + 10 x index, noise sd 1 (+ shift), over the chamber's context. */
export function makeTrace(spec: RunSpec): TraceRecord {
  const u = rng(spec.seed);
  const svids = new Map<string, Float64Array>();
  SVIDS.forEach((name, i) => {
    const a = new Float64Array(spec.samples);
    for (let k = 0; k < a.length; k++) a[k] = 100 + 10 * i + spec.shift + gauss(u);
    svids.set(name, a);
  });
  return {
    toolId: spec.chamber.toolId,
    chamberId: spec.chamber.chamberId,
    runId: spec.runId,
    timing: { kind: 'regular', startSeconds: spec.startMs / 1000, frequencyHz: spec.samples / spec.chamber.contextDurationSeconds },
    svids,
    steps: [],
    recipe: RECIPE,
  };
}

export function notificationOf(spec: RunSpec): RunNotification {
  const end = spec.startMs + spec.chamber.contextDurationSeconds * 1000;
  return {
    schema: 1,
    toolId: spec.chamber.toolId,
    chamberId: spec.chamber.chamberId,
    runId: spec.runId,
    recipe: RECIPE,
    contextWindow: { start: new Date(spec.startMs).toISOString(), end: new Date(end).toISOString() },
    svids: [...SVIDS],
    trace: { store: 'default', samples: spec.samples },
    completedAt: new Date(end).toISOString(),
  };
}
