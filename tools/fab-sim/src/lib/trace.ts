import type { TraceRecord, TraceStep } from '@defender/contracts';
import type { SensorEffect } from './excursions';
import { runGaussian, svidName, type ChamberSpec } from './fab';
import { mix, rng } from './rng';

/** Samples per SVID of one run of `ch`. */
export function samplesPerRun(ch: ChamberSpec): number {
  return Math.round(ch.collectionFreqHz * ch.contextDurationSeconds);
}

/** Start index of each recipe step in a run of `n` samples. */
export function stepStarts(ch: ChamberSpec, n: number): number[] {
  const out: number[] = [];
  let acc = 0;
  for (const s of ch.recipe.steps) {
    out.push(Math.min(n - 1, Math.round(acc * n)));
    acc += s.fraction;
  }
  return out;
}

/** Value of setpoint/state `j` (0-based among the non-sensor SVIDs) in step `s`: constant per step. */
export function setpointValue(ch: ChamberSpec, j: number, s: number): number {
  const u = rng(mix(ch.seed, 0x5e7, j));
  const isState = j % 3 === 2;
  const base = isState ? 1 : Math.round(10 ** (u() * 3) * 10) / 10;
  const v = rng(mix(ch.seed, 0x5e7, j, s + 1))();
  if (isState) return v < 0.5 ? 0 : 1;
  return Math.round(base * ([0, 0.5, 1, 1, 1.5][Math.floor(v * 5)] ?? 1) * 10) / 10;
}

export interface RunContext {
  readonly runId: string;
  /** 0-based run index of the chamber. */
  readonly runIndex: number;
  /** Start of the context, epoch seconds. */
  readonly startSeconds: number;
  /** Excursion effects by sensor name. */
  readonly effects?: ReadonlyMap<string, SensorEffect>;
}

/**
 * One run's trace (T-chart) as the data-collection layer stores it: Float32 samples at the
 * chamber's rate over its context, sensors first (level per step with a settling transient, a
 * run-to-run offset, white noise), then setpoints and states (constant per step).
 */
export function synthesizeTrace(ch: ChamberSpec, run: RunContext): TraceRecord {
  const n = samplesPerRun(ch);
  const starts = stepStarts(ch, n);
  const steps: TraceStep[] = ch.recipe.steps.map((s, i) => ({ name: s.name, startIndex: starts[i] ?? 0 }));
  const g = runGaussian(ch, run.runIndex);
  const svids = new Map<string, Float32Array>();
  ch.sensors.forEach((sensor, k) => {
    const a = new Float32Array(n);
    const effect = run.effects?.get(sensor.name);
    const offset = (g.next() + (effect?.offsetSigmas ?? 0)) * sensor.runSigma;
    const noise = sensor.noiseSigma * (effect?.noiseFactor ?? 1);
    const tau = Math.max(1, sensor.settleSeconds * ch.collectionFreqHz);
    const noiseStream = runGaussian(ch, run.runIndex, k + 1);
    for (let s = 0; s < starts.length; s++) {
      const from = starts[s] ?? 0;
      const to = starts[s + 1] ?? n;
      const level = sensor.stepLevels[s] ?? 0;
      const prev = sensor.stepLevels[s - 1] ?? level;
      for (let i = from; i < to; i++) {
        const settle = (prev - level) * Math.exp(-(i - from) / tau);
        a[i] = level + settle + offset + noise * noiseStream.next();
      }
    }
    svids.set(sensor.name, a);
  });
  for (let i = ch.sensors.length; i < ch.svidCount; i++) {
    const j = i - ch.sensors.length;
    const a = new Float32Array(n);
    for (let s = 0; s < starts.length; s++) {
      a.fill(setpointValue(ch, j, s), starts[s] ?? 0, starts[s + 1] ?? n);
    }
    svids.set(svidName(ch, i), a);
  }
  return {
    toolId: ch.toolId,
    chamberId: ch.chamberId,
    runId: run.runId,
    timing: { kind: 'regular', startSeconds: run.startSeconds, frequencyHz: ch.collectionFreqHz },
    svids,
    steps,
    recipe: ch.recipe.name,
  };
}
