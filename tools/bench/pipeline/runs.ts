// Run generation for the pipeline benchmark. Adapted from tools/e2e/src/runs.ts (no path alias
// reaches the e2e fixtures, so the few bits needed are copied here): deterministic traces and the
// completion notification the data-collection layer publishes once a trace is in the store.
import type { RunNotification, SampleArray, TraceRecord } from '@defender/contracts';
import { seededRandom } from '@defender/hashing';

export interface RunSpec {
  toolId: string;
  chamberId: string;
  runId: string;
  svids: readonly string[];
  /** Samples per SVID. */
  samples: number;
  freqHz: number;
  /** Added to every sample of the first `shiftSvids` SVIDs (an excursion on a few sensors). */
  shift?: number;
  shiftSvids?: number;
  seed: number;
  recipe: string;
}

/** SVID names `svid-000` ... */
export function svidNames(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `svid-${String(i).padStart(3, '0')}`);
}

/** A run's trace: per SVID level 100 + 10 x index, noise sd 1 (Box-Muller pairs), optional shift. */
export function makeTrace(spec: RunSpec): TraceRecord {
  const u = seededRandom(spec.seed);
  const svids = new Map<string, SampleArray>();
  spec.svids.forEach((name, i) => {
    const a = new Float64Array(spec.samples);
    const level =
      100 +
      10 * i +
      (spec.shift !== undefined && i < (spec.shiftSvids ?? spec.svids.length) ? spec.shift : 0);
    for (let k = 0; k < a.length; k += 2) {
      const r = Math.sqrt(-2 * Math.log(1 - u()));
      const th = 2 * Math.PI * u();
      a[k] = level + r * Math.cos(th);
      if (k + 1 < a.length) a[k + 1] = level + r * Math.sin(th);
    }
    svids.set(name, a);
  });
  return {
    toolId: spec.toolId,
    chamberId: spec.chamberId,
    runId: spec.runId,
    timing: { kind: 'regular', startSeconds: Date.UTC(2026, 10, 25) / 1000, frequencyHz: spec.freqHz },
    svids,
    steps: [],
    recipe: spec.recipe,
  };
}

export function notificationOf(spec: RunSpec): RunNotification {
  const start = Date.UTC(2026, 10, 25);
  const end = start + (spec.samples / spec.freqHz) * 1000;
  return {
    schema: 1,
    toolId: spec.toolId,
    chamberId: spec.chamberId,
    runId: spec.runId,
    recipe: spec.recipe,
    contextWindow: { start: new Date(start).toISOString(), end: new Date(end).toISOString() },
    svids: [...spec.svids],
    trace: { store: 'default', samples: spec.samples },
    completedAt: new Date(end).toISOString(),
  };
}
