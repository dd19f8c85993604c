import { effectsFor, type Excursion } from './excursions';
import { generateFab, type ChamberSpec } from './fab';
import { samplesPerRun, stepStarts, synthesizeTrace } from './trace';

function stats(a: ArrayLike<number>): { mean: number; std: number } {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]!;
  const mean = s / a.length;
  let v = 0;
  for (let i = 0; i < a.length; i++) v += (a[i]! - mean) ** 2;
  return { mean, std: Math.sqrt(v / (a.length - 1)) };
}

const sd = (xs: number[]) => stats(xs).std;

describe('synthesizeTrace', () => {
  // A light chamber keeps the test fast.
  const fab = generateFab({ tools: 20, seed: 5 });
  const ch: ChamberSpec = [...fab.chambers].sort((a, b) => a.weight - b.weight)[0]!;
  const sensor = ch.sensors[0]!;
  const run = (k: number, x: Excursion[] = []) => synthesizeTrace(ch, { runId: `r${k}`, runIndex: k, startSeconds: 1_700_000_000 + k * 2000, effects: effectsFor(x, k) });

  it('has every SVID at the chamber rate over its context, with the recipe steps', () => {
    const t = run(0);
    const n = samplesPerRun(ch);
    expect(t.svids.size).toBe(ch.svidCount);
    for (const a of t.svids.values()) expect(a).toHaveLength(n);
    expect(t.steps.map((s) => s.name)).toEqual(ch.recipe.steps.map((s) => s.name));
    expect(t.steps.map((s) => s.startIndex)).toEqual(stepStarts(ch, n));
    expect(t.timing).toEqual({ kind: 'regular', startSeconds: 1_700_000_000, frequencyHz: ch.collectionFreqHz });
    expect(t.recipe).toBe(ch.recipe.name);
  });

  it('is deterministic per (chamber, run)', () => {
    expect(run(3).svids.get(sensor.name)).toEqual(run(3).svids.get(sensor.name));
    expect(run(3).svids.get(sensor.name)).not.toEqual(run(4).svids.get(sensor.name));
  });

  it('keeps setpoints and states constant within a step and identical across runs (no variation to chart)', () => {
    const a = run(1);
    const b = run(2);
    const name = [...a.svids.keys()][ch.sensors.length]!;
    expect(a.svids.get(name)).toEqual(b.svids.get(name));
    const starts = a.steps.map((s) => s.startIndex);
    const x = a.svids.get(name)!;
    for (let s = 0; s < starts.length; s++) {
      const end = s + 1 < starts.length ? starts[s + 1]! : x.length;
      expect(new Set(x.subarray(starts[s], end)).size).toBe(1);
    }
  });

  it('varies a sensor mean from run to run by about its run sigma, and its std by little', () => {
    const means: number[] = [];
    const stds: number[] = [];
    for (let k = 0; k < 120; k++) {
      const s = stats(run(k).svids.get(sensor.name)!);
      means.push(s.mean);
      stds.push(s.std);
    }
    expect(sd(means) / sensor.runSigma).toBeGreaterThan(0.75);
    expect(sd(means) / sensor.runSigma).toBeLessThan(1.3);
    expect(sd(stds)).toBeLessThan(sensor.noiseSigma * 0.2);
  });

  it('applies excursions: mean shift and spike move the level, drift grows, a variance burst widens the noise', () => {
    const base = stats(run(30).svids.get(sensor.name)!);
    const shift: Excursion = { id: 'x1', chamber: ch.key, toolId: ch.toolId, chamberId: ch.chamberId, svid: sensor.name, kind: 'mean-shift', startRun: 30, endRun: 32, magnitude: 4, description: '' };
    expect((stats(run(30, [shift]).svids.get(sensor.name)!).mean - base.mean) / sensor.runSigma).toBeCloseTo(4, 5);
    expect(stats(run(33, [shift]).svids.get(sensor.name)!).mean).toBeCloseTo(stats(run(33).svids.get(sensor.name)!).mean, 9);
    const drift: Excursion = { ...shift, kind: 'drift', magnitude: 0.5, endRun: 39 };
    const d = (k: number) => (stats(run(k, [drift]).svids.get(sensor.name)!).mean - stats(run(k).svids.get(sensor.name)!).mean) / sensor.runSigma;
    expect(d(30)).toBeCloseTo(0.5, 5);
    expect(d(35)).toBeCloseTo(3, 5);
    // Within the longest step, after settling, the noise is all there is: a burst triples it.
    const burst: Excursion = { ...shift, kind: 'variance-burst', magnitude: 3 };
    const t = run(30);
    const longest = ch.recipe.steps.reduce((best, s, i) => (s.fraction > ch.recipe.steps[best]!.fraction ? i : best), 0);
    const from = t.steps[longest]!.startIndex;
    const to = longest + 1 < t.steps.length ? t.steps[longest + 1]!.startIndex : samplesPerRun(ch);
    const settled = (a: Float32Array | Float64Array) => a.subarray(from + Math.floor((to - from) / 2), to);
    const calm = stats(settled(t.svids.get(sensor.name)!)).std;
    const wild = stats(settled(run(30, [burst]).svids.get(sensor.name)!)).std;
    expect(calm / sensor.noiseSigma).toBeGreaterThan(0.8);
    expect(calm / sensor.noiseSigma).toBeLessThan(1.2);
    expect(wild / calm).toBeGreaterThan(2.5);
    expect(wild / calm).toBeLessThan(3.5);
    // Other SVIDs are untouched.
    const other = ch.sensors[1]!.name;
    expect(run(30, [shift]).svids.get(other)).toEqual(run(30).svids.get(other));
  });
});
