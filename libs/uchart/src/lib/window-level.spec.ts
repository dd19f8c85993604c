import { seededRandom } from '@defender/hashing';
import { IndicatorCalculator, type WindowRequest } from './indicators';
import { medianFilter3, medianFilteredAt } from './median-filter';
import { computeBaseStatistics, createBaseStatistics } from './statistics';
import { createTrace, type SampleArray, type SampleTiming } from './trace';
import { addRepeated, computeWindowLevel } from './window-level';

const regular: SampleTiming = { kind: 'regular', startSeconds: 0, frequencyHz: 2 };

/** The loop {@link addRepeated} stands for. */
function repeated(s: number, d: number, times: number): number {
  for (let i = 0; i < times; i++) s += d;
  return s;
}

/** Samples as a chamber's SVIDs show them: runs of a setpoint (0 and -0 among them), noise, NaN, ±Infinity, huge values. */
function samples(u: () => number, n: number, float32: boolean): SampleArray {
  const out = float32 ? new Float32Array(n) : new Float64Array(n);
  const levels = [0, -0, 1, 100.25, -3.5, 1e-300, 1.7e308, 0.1 + 0.2, 12345.678];
  let i = 0;
  while (i < n) {
    const len = 1 + Math.floor(u() * (u() < 0.5 ? 3 : 12));
    const kind = u();
    const level = levels[Math.floor(u() * levels.length)] as number;
    for (let j = 0; j < len && i < n; j++, i++) {
      if (kind < 0.5) out[i] = level;
      else if (kind < 0.8) out[i] = level + Math.round(u() * 8) * (u() < 0.5 ? 0.125 : 0.1);
      else if (kind < 0.9) out[i] = NaN;
      else out[i] = u() < 0.5 ? Infinity : -Infinity;
    }
  }
  return out;
}

describe('addRepeated', () => {
  it('is the loop of additions, bit for bit (sums exact or not, zeros of either sign, infinities, NaN)', () => {
    const u = seededRandom(3);
    const pick = (): number => {
      const r = u();
      if (r < 0.1) return u() < 0.5 ? 0 : -0;
      if (r < 0.15) return [Infinity, -Infinity, NaN, 1e308, -1e-320][Math.floor(u() * 5)] as number;
      if (r < 0.5) return Math.round((u() - 0.5) * 2 ** 20) * 2 ** -Math.floor(u() * 30);
      if (r < 0.7) return Math.fround((u() - 0.5) * 1000);
      return (u() - 0.5) * 10 ** Math.floor(u() * 12 - 6);
    };
    for (let t = 0; t < 20000; t++) {
      const s = pick();
      const d = pick();
      const times = u() < 0.1 ? Math.floor(u() * 3) : Math.floor(u() * (u() < 0.5 ? 50 : 5000));
      expect({ t, s, d, times, sum: addRepeated(s, d, times) }).toEqual({ t, s, d, times, sum: repeated(s, d, times) });
    }
  });

  it('adds a float32 setpoint over a long run as one product (the loop gives the same)', () => {
    const d = Math.fround(100.3) - Math.fround(99.7);
    expect(Object.is(addRepeated(0.5, d, 100000), repeated(0.5, d, 100000))).toBe(true);
    expect(Object.is(addRepeated(-0, 0, 3), 0)).toBe(true);
    expect(Object.is(addRepeated(-0, -0, 3), -0)).toBe(true);
  });
});

describe('medianFilteredAt', () => {
  it('is what medianFilter3 writes at the sample', () => {
    const u = seededRandom(5);
    for (let t = 0; t < 300; t++) {
      const values = samples(u, 1 + Math.floor(u() * 20), u() < 0.5);
      const whole = medianFilter3(values, new Float64Array(values.length));
      for (let i = 0; i < values.length; i++) expect(Object.is(medianFilteredAt(values, i), whole[i])).toBe(true);
    }
  });
});

describe('computeWindowLevel', () => {
  it('gives n, nMissing and mean of computeBaseStatistics bit for bit, raw or filtered, on random windows', () => {
    const u = seededRandom(9);
    for (let t = 0; t < 2000; t++) {
      const n = 1 + Math.floor(u() * 60);
      const values = samples(u, n, u() < 0.5);
      const start = Math.floor(u() * n);
      const end = start + Math.floor(u() * (n + 1 - start));
      const range = { start, end };
      const filtered = u() < 0.7;
      const input = filtered ? medianFilter3(values, new Float64Array(n)) : values;
      const timing: SampleTiming = u() < 0.5 ? regular : { kind: 'explicit', timesSeconds: Float64Array.from({ length: n }, (_, i) => i * 0.5 + (i > 3 ? 0.25 : 0)) };
      const want = computeBaseStatistics(input, timing, range);
      const got = computeWindowLevel(values, range, filtered, createBaseStatistics());
      for (const key of ['n', 'nMissing', 'mean'] as const) expect({ t, key, v: Object.is(got[key], want[key]) ? 'same' : [got[key], want[key]] }).toEqual({ t, key, v: 'same' });
      expect(Number.isNaN(got.std) && Number.isNaN(got.min) && Number.isNaN(got.integral)).toBe(true);
    }
  });

  it('skips the known runs of one value and the part already filtered it is given, with the same result', () => {
    const u = seededRandom(17);
    for (let t = 0; t < 1000; t++) {
      const n = 2 + Math.floor(u() * 60);
      const values = samples(u, n, u() < 0.5);
      // Known ranges: maximal runs of two or more equal finite samples (bitwise), a random part of each.
      const known: number[] = [];
      for (let i = 0; i < n; ) {
        let j = i + 1;
        while (j < n && Object.is(values[j], values[i])) j++;
        const x = values[i] as number;
        if (j - i >= 2 && Number.isFinite(x) && u() < 0.7) {
          const a = i + Math.floor(u() * (j - i - 1));
          known.push(a, a + 2 + Math.floor(u() * (j - a - 1)));
        }
        i = j;
      }
      const start = Math.floor(u() * n);
      const range = { start, end: start + Math.floor(u() * (n + 1 - start)) };
      const filtered = u() < 0.7;
      const want = computeWindowLevel(values, range, filtered, createBaseStatistics());
      const got = computeWindowLevel(values, range, filtered, createBaseStatistics(), known);
      expect({ t, n: got.n, m: got.nMissing, mean: Object.is(got.mean, want.mean) }).toEqual({ t, n: want.n, m: want.nMissing, mean: true });
      // A part already filtered is read, not filtered again.
      const from = Math.floor(u() * n);
      const to = from + Math.floor(u() * (n + 1 - from));
      const done = { values: medianFilter3(values, new Float64Array(n).fill(NaN), from, to), from, to };
      const read = computeWindowLevel(values, range, filtered, createBaseStatistics(), known, done);
      expect({ t, n: read.n, m: read.nMissing, mean: Object.is(read.mean, want.mean) }).toEqual({ t, n: want.n, m: want.nMissing, mean: true });
    }
  });

  it('reads a window of one setpoint in a few steps and still equals the pass over every sample', () => {
    const values = new Float32Array(100000).fill(Math.fround(101.7));
    values.fill(Math.fround(55.1), 40000, 70000);
    values[5] = NaN;
    const want = computeBaseStatistics(medianFilter3(values, new Float64Array(values.length)), regular);
    const got = computeWindowLevel(values, { start: 0, end: values.length }, true, createBaseStatistics());
    expect([got.n, got.nMissing, got.mean]).toEqual([want.n, want.nMissing, want.mean]);
    expect(got.n).toBe(100000);
  });
});

describe('IndicatorCalculator.computeWindows with levelOnly', () => {
  it('gives the level of a window as the full statistics do, the windows found constant before it skipped', () => {
    const u = seededRandom(13);
    for (let t = 0; t < 100; t++) {
      const n = 8 + Math.floor(u() * 40);
      const p = samples(u, n, true);
      // Setpoint steps now and then, so that the level finds windows known constant.
      const steps = [0, 0.3, 0.6].map((f, i) => ({ name: `s${i}`, startIndex: Math.floor(f * n) }));
      for (const st of [steps[0], steps[2]]) if (st && u() < 0.5) p.fill(u() < 0.2 ? -0 : Math.fround(u() * 100), st.startIndex, st === steps[0] ? steps[1]?.startIndex : n);
      const trace = createTrace({ runId: `r${t}`, timing: regular, svids: { p }, steps });
      const windows: WindowRequest['window'][] = [{ kind: 'step', step: 's0' }, { kind: 'context' }, { kind: 'step', step: 's1' }, { kind: 'step', step: 's2' }];
      const filter = u() < 0.7 ? { filter: 'median3' as const } : {};
      // The whole run asked for its level alone, after a step and before the others (computed after them).
      const level = new IndicatorCalculator().computeWindows(trace, windows.map((window) => ({ svid: 'p', window, ...filter, percentiles: false, shape: false, levelOnly: window.kind === 'context' })));
      const full = new IndicatorCalculator().computeWindows(trace, windows.map((window) => ({ svid: 'p', window, ...filter, percentiles: false, shape: false })));
      level.forEach((w, i) => {
        const f = full[i];
        if (!w.ok || !f?.ok) throw new Error('window expected');
        if (windows[i]?.kind === 'context') {
          expect([w.stats.n, w.stats.nMissing, w.stats.mean]).toEqual([f.stats.n, f.stats.nMissing, f.stats.mean]);
        } else expect(w).toEqual(f);
      });
    }
  });
});
