import type { TraceRecord } from '@defender/contracts';
import { generateFab, pmCycleOf, type ChamberSpec } from './fab';
import { runLayout, samplesPerRun, synthesizeSensors, synthesizeTrace } from './trace';

function mean(a: ArrayLike<number>, from = 0, to = a.length): number {
  let s = 0;
  for (let i = from; i < to; i++) s += a[i]!;
  return s / (to - from);
}

function sd(a: ArrayLike<number>): number {
  const m = mean(a);
  let v = 0;
  for (let i = 0; i < a.length; i++) v += (a[i]! - m) ** 2;
  return Math.sqrt(v / (a.length - 1));
}

function corr(x: readonly number[], y: readonly number[]): number {
  const mx = mean(x);
  const my = mean(y);
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < x.length; i++) {
    sxy += (x[i]! - mx) * (y[i]! - my);
    sxx += (x[i]! - mx) ** 2;
    syy += (y[i]! - my) ** 2;
  }
  return sxy / Math.sqrt(sxx * syy);
}

/** Least-squares slope of a[from, to) per sample. */
function slope(a: ArrayLike<number>, from: number, to: number): number {
  const n = to - from;
  const mx = (n - 1) / 2;
  const my = mean(a, from, to);
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (i - mx) * (a[from + i]! - my);
    sxx += (i - mx) ** 2;
  }
  return sxy / sxx;
}

const run = (ch: ChamberSpec, k: number): TraceRecord => synthesizeTrace(ch, { runId: `r${k}`, runIndex: k, startSeconds: 1_700_000_000 + k * 600 });
const lengthOf = (t: TraceRecord) => t.svids.values().next().value!.length;
const span = (t: TraceRecord, s: number) => [t.steps[s]!.startIndex, t.steps[s + 1]?.startIndex ?? lengthOf(t)] as const;
const longestStep = (ch: ChamberSpec) => ch.recipe.steps.reduce((best, s, i) => (s.fraction > ch.recipe.steps[best]!.fraction ? i : best), 0);
/** The settled second half of a step's samples. */
const settled = (t: TraceRecord, s: number): readonly [number, number] => {
  const [from, to] = span(t, s);
  return [from + Math.floor((to - from) / 2), to];
};

describe('synthesizeTrace', () => {
  const fab = generateFab({ tools: 30, seed: 5, profile: 'detection' });
  const ch = fab.chambers[0]!;

  it('has every SVID at the chamber rate, the recipe steps where the run layout puts them, and a length near the nominal one', () => {
    const lengths = new Set<number>();
    for (let k = 0; k < 20; k++) {
      const t = run(ch, k);
      const layout = runLayout(ch, k);
      expect(t.svids.size).toBe(ch.svidCount);
      for (const a of t.svids.values()) expect(a).toHaveLength(layout.n);
      expect(t.steps.map((s) => s.name)).toEqual(ch.recipe.steps.map((s) => s.name));
      expect(t.steps.map((s) => s.startIndex)).toEqual(layout.starts);
      expect(t.timing).toEqual({ kind: 'regular', startSeconds: 1_700_000_000 + k * 600, frequencyHz: ch.collectionFreqHz });
      expect(t.recipe).toBe(ch.recipe.name);
      expect(Math.abs(layout.n - samplesPerRun(ch)) / samplesPerRun(ch)).toBeLessThan(0.05);
      lengths.add(layout.n);
    }
    expect(lengths.size).toBeGreaterThan(1);
  });

  it('is deterministic per (chamber, run): any run can be synthesised alone', () => {
    const name = ch.sensors[0]!.name;
    expect(run(ch, 3).svids.get(name)).toEqual(run(ch, 3).svids.get(name));
    run(ch, 200); // no state carries over between runs
    expect(run(ch, 3).svids.get(name)).toEqual(synthesizeTrace(ch, { runId: 'other', runIndex: 3, startSeconds: 0 }).svids.get(name));
    expect(run(ch, 3).svids.get(name)).not.toEqual(run(ch, 4).svids.get(name));
  });

  it('writes into the buffers a caller gives (reused from run to run, stale samples and all) exactly what it would allocate', () => {
    const buffers: Float32Array[] = [];
    const allocate = (svid: number, length: number): Float32Array => {
      let b = buffers[svid];
      if (!b || b.length < length) buffers[svid] = b = new Float32Array(2 * length).fill(NaN);
      return b.subarray(0, length);
    };
    for (const k of [7, 2, 9]) {
      const own = run(ch, k);
      const into = synthesizeTrace(ch, { runId: `r${k}`, runIndex: k, startSeconds: 1_700_000_000 + k * 600, allocate });
      expect([...into.svids.keys()]).toEqual([...own.svids.keys()]);
      for (const [name, a] of own.svids) expect(into.svids.get(name)).toEqual(a);
    }
    expect(buffers.length).toBe(ch.svidCount);
  });

  it('keeps setpoints and states constant within a step, at the same values in every run', () => {
    const a = run(ch, 1);
    const b = run(ch, 2);
    for (const name of [...a.svids.keys()].slice(ch.sensors.length)) {
      for (const t of [a, b]) {
        for (let s = 0; s < t.steps.length; s++) {
          const [from, to] = span(t, s);
          expect(new Set(t.svids.get(name)!.subarray(from, to)).size).toBe(1);
        }
      }
      expect(t0(a, name)).toEqual(t0(b, name));
    }
    function t0(t: TraceRecord, name: string) {
      return t.steps.map((_s, i) => t.svids.get(name)![span(t, i)[0]]);
    }
  });

  it('varies an endpoint-controlled step by about 2 % of its length from run to run, and no other step', () => {
    const endpoint = ch.recipe.steps.findIndex((s) => (s.durationSd ?? 0) > 0);
    const other = ch.recipe.steps.findIndex((s, i) => i !== endpoint && (s.durationSd ?? 0) === 0);
    const lengths = (s: number) => Array.from({ length: 300 }, (_, k) => {
      const l = runLayout(ch, k);
      return (l.starts[s + 1] ?? l.n) - l.starts[s]!;
    });
    const ep = lengths(endpoint);
    expect(sd(ep) / mean(ep)).toBeGreaterThan(0.015);
    expect(sd(ep) / mean(ep)).toBeLessThan(0.025);
    expect(new Set(lengths(other)).size).toBe(1);
  });

  it('ramps linearly through a ramp step, from the previous step\'s level to its own', () => {
    // The sensor and ramp step with the largest level change in the fab's first chambers.
    const cases = fab.chambers.slice(0, 10).flatMap((c) =>
      c.recipe.steps.flatMap((st, s) =>
        !st.ramp
          ? []
          : c.sensors.map((sensor) => {
              const prev = sensor.stepLevels[s === 0 ? c.recipe.steps.length - 1 : s - 1]!;
              return { c, s, sensor, delta: sensor.stepLevels[s]! - prev, z: Math.abs(sensor.stepLevels[s]! - prev) / sensor.noiseSigma };
            }),
      ),
    );
    const best = cases.sort((a, b) => b.z - a.z)[0]!;
    const slopes: number[] = [];
    for (let k = 0; k < 30; k++) {
      const t = run(best.c, k);
      const [from, to] = span(t, best.s);
      // Per sample, times the samples of the step: the level change over the ramp.
      slopes.push(slope(t.svids.get(best.sensor.name)!, from, to) * (to - from));
    }
    expect(mean(slopes) / best.delta).toBeGreaterThan(0.9);
    expect(mean(slopes) / best.delta).toBeLessThan(1.1);
  });

  it('correlates a sensor\'s run mean with the previous run\'s within a PM cycle (wander and ageing)', () => {
    const lag1: number[] = [];
    for (const c of fab.chambers.slice(0, 3)) {
      // The runs of one whole PM cycle.
      const first = c.pmIntervalRuns - c.pmOffsetRuns;
      const runs = Array.from({ length: Math.min(300, c.pmIntervalRuns) }, (_, i) => run(c, first + i));
      expect(new Set(runs.map((_t, i) => pmCycleOf(c, first + i).cycle)).size).toBe(1);
      for (const sensor of c.sensors) {
        const m = runs.map((t) => mean(t.svids.get(sensor.name)!));
        lag1.push(corr(m.slice(0, -1), m.slice(1)));
      }
    }
    expect(mean(lag1)).toBeGreaterThan(0.12);
    expect(lag1.filter((r) => r > 0).length / lag1.length).toBeGreaterThan(0.8);
  });

  it('steps a sensor\'s level back at each PM by its ageing over the cycle', () => {
    // 5 runs either side of 5 PMs of 3 chambers: the jump of the run mean, in run sigmas, against
    // the direction the sensor ages in.
    const jumps: number[] = [];
    for (const c of fab.chambers.slice(0, 3)) {
      for (let cycle = 1; cycle <= 5; cycle++) {
        const pm = cycle * c.pmIntervalRuns - c.pmOffsetRuns;
        expect(pmCycleOf(c, pm).runInCycle).toBe(0);
        const before = [1, 2, 3, 4, 5].map((d) => run(c, pm - d));
        const after = [0, 1, 2, 3, 4].map((d) => run(c, pm + d));
        for (const sensor of c.sensors) {
          const m = (ts: TraceRecord[]) => mean(ts.map((t) => mean(t.svids.get(sensor.name)!)));
          jumps.push(((m(after) - m(before)) / sensor.runSigma / -Math.sign(sensor.ageingSigmas)) / Math.abs(sensor.ageingSigmas));
        }
      }
    }
    // The jump is the whole cycle's ageing (ratio 1), blurred by 5-run averages and the wander.
    expect(mean(jumps)).toBeGreaterThan(0.6);
    expect(mean(jumps)).toBeLessThan(1.4);
  });

  it('puts a quantised sensor\'s samples on its resolution grid', () => {
    const c = fab.chambers.find((x) => x.sensors.some((s) => s.noiseKind === 'quantised'))!;
    const sensor = c.sensors.find((s) => s.noiseKind === 'quantised')!;
    for (let k = 0; k < 5; k++) {
      const a = run(c, k).svids.get(sensor.name)!;
      let off = 0;
      for (let i = 0; i < a.length; i++) {
        const q = a[i]! / sensor.resolution!;
        off = Math.max(off, Math.abs(q - Math.round(q)));
      }
      expect(off).toBeLessThan(1e-3);
      expect(new Set(a).size).toBeGreaterThan(3);
    }
  });

  it('skews a skewed sensor\'s noise the way its sign says', () => {
    const c = fab.chambers.find((x) => x.sensors.some((s) => s.noiseKind === 'skewed' && s.glitchRate === 0))!;
    const sensor = c.sensors.find((s) => s.noiseKind === 'skewed' && s.glitchRate === 0)!;
    let m3 = 0;
    let m2 = 0;
    for (let k = 0; k < 40; k++) {
      const t = run(c, k);
      const a = t.svids.get(sensor.name)!;
      const [from, to] = settled(t, longestStep(c));
      const m = mean(a, from, to);
      for (let i = from; i < to; i++) {
        m2 += (a[i]! - m) ** 2;
        m3 += (a[i]! - m) ** 3;
      }
    }
    // A clear third moment in the skew's direction (a centred lognormal of shape >= 0.3 has |skewness| >= 0.9).
    expect((m3 / m2 ** 1.5) * Math.sqrt(40 * (settled(run(c, 0), longestStep(c))[1] - settled(run(c, 0), longestStep(c))[0])) * Math.sign(sensor.skew!)).toBeGreaterThan(0.5);
  });

  it('glitches single samples by 4-8 noise sigma, both signs, at about 1 in 3,000 samples on the sensors that have them', () => {
    // The same runs with glitches switched off differ exactly at the glitches.
    const diffs: number[] = [];
    let samples = 0;
    let unglitchedDiffs = 0;
    for (const c of fab.chambers.slice(0, 8)) {
      const clean: ChamberSpec = { ...c, sensors: c.sensors.map((s) => ({ ...s, glitchRate: 0 })) };
      for (let k = 0; k < 40; k++) {
        const a = run(c, k);
        const b = run(clean, k);
        for (const sensor of c.sensors) {
          const x = a.svids.get(sensor.name)!;
          const y = b.svids.get(sensor.name)!;
          if (sensor.glitchRate === 0) {
            for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) unglitchedDiffs++;
            continue;
          }
          // Quantisation would blur the amplitudes.
          if (sensor.noiseKind === 'quantised') continue;
          samples += x.length;
          for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) diffs.push((x[i]! - y[i]!) / sensor.noiseSigma);
        }
      }
    }
    expect(unglitchedDiffs).toBe(0);
    expect(samples).toBeGreaterThan(100_000);
    const rate = diffs.length / samples;
    expect(rate * 3000).toBeGreaterThan(0.75);
    expect(rate * 3000).toBeLessThan(1.25);
    expect(Math.min(...diffs.map(Math.abs))).toBeGreaterThanOrEqual(3.99);
    expect(Math.max(...diffs.map(Math.abs))).toBeLessThanOrEqual(8.01);
    const up = diffs.filter((d) => d > 0).length / diffs.length;
    expect(up).toBeGreaterThan(0.3);
    expect(up).toBeLessThan(0.7);
  });

  it('moves the correlated pair\'s run levels together (correlation 0.85-0.95), the other sensors independently', () => {
    const pairs: number[] = [];
    const others: number[] = [];
    for (const c of fab.chambers.slice(0, 4)) {
      const s = longestStep(c);
      const means = new Map<string, number[]>(c.sensors.map((x) => [x.name, []]));
      for (let k = 0; k < 200; k++) {
        const t = run(c, k);
        const [from, to] = settled(t, s);
        for (const x of c.sensors) means.get(x.name)!.push(mean(t.svids.get(x.name)!, from, to));
      }
      // First differences leave the slow ageing and wander (shared by the pair) out.
      const diff = (name: string) => means.get(name)!.slice(1).map((v, i) => v - means.get(name)![i]!);
      const [a, b] = c.correlatedPair!;
      pairs.push(corr(diff(a), diff(b)));
      const rest = c.sensors.map((x) => x.name).filter((n) => n !== a && n !== b);
      if (rest.length > 0) others.push(corr(diff(a), diff(rest[0]!)));
    }
    for (const r of pairs) {
      expect(r).toBeGreaterThan(0.8);
      expect(r).toBeLessThan(0.97);
    }
    for (const r of others) expect(Math.abs(r)).toBeLessThan(0.3);
  });

  it('synthesises single sensors (calibration) as the whole trace does, also cut after a step', () => {
    const c = fab.chambers[1]!;
    const t = run(c, 9);
    const ks = c.sensors.map((_s, k) => k);
    const whole = synthesizeSensors(c, 9, undefined, ks, true);
    ks.forEach((k) => expect(whole.arrays[k]).toEqual(t.svids.get(c.sensors[k]!.name)));
    const cut = synthesizeSensors(c, 9, undefined, [2], true, 1);
    const end = cut.layout.starts[2]!;
    expect(cut.arrays[0]!.subarray(0, end)).toEqual(whole.arrays[2]!.subarray(0, end));
  });

  it('synthesises a default-profile chamber with its nominal size', () => {
    const big = generateFab({ tools: 4, seed: 3 });
    const c = [...big.chambers].sort((a, b) => a.weight - b.weight)[0]!;
    const t = run(c, 7);
    expect(t.svids.size).toBe(c.svidCount);
    expect(Math.abs(lengthOf(t) - samplesPerRun(c)) / samplesPerRun(c)).toBeLessThan(0.05);
  });
});
