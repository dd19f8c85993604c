import { normalDeviate, seededRandom } from '@defender/hashing';
import fc from 'fast-check';
import { normalQuantile } from '@defender/uchart';
import { calibratedFamilyWidth, fitGumbel, gumbelQuantile, leaveOneOutMaxima } from './family-limits';

/** Deterministic uniform (0, 1) deviates: the workspace's seeded source, kept off 0 (a log of it is taken). */
function uniforms(seed: number): () => number {
  const u = seededRandom(seed);
  return () => (u() * 4294967296 + 0.5) / 4294967296;
}

const normal = (u: () => number) => () => normalDeviate(u);
/** Maximum of 10 unit exponentials: the Gumbel-tailed shape of a window's max of skewed noise. */
const maxOfExponentials = (u: () => number) => () => {
  let m = 0;
  for (let k = 0; k < 10; k++) m = Math.max(m, -Math.log(u()));
  return m;
};

function table(n: number, p: number, draw: () => number): number[][] {
  return Array.from({ length: n }, () => Array.from({ length: p }, draw));
}

/** Share of `runs` fresh rows with any column beyond `width` sds of the Phase I column mean. */
function exceedance(phaseOne: number[][], runs: number[][], width: number): number {
  const p = phaseOne[0]!.length;
  const stats = Array.from({ length: p }, (_, j) => {
    const xs = phaseOne.map((r) => r[j]!);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1));
    return { mean, sd };
  });
  let hit = 0;
  for (const r of runs) if (r.some((v, j) => Math.abs(v - stats[j]!.mean) > width * stats[j]!.sd)) hit++;
  return hit / runs.length;
}

describe('fitGumbel (L-moments)', () => {
  it('recovers a Gumbel law from its own quantiles at plotting positions', () => {
    const law = { location: 2, scale: 0.5 };
    const n = 2000;
    const xs = Array.from({ length: n }, (_, i) => gumbelQuantile(law, (i + 0.65) / (n + 0.3)));
    const fit = fitGumbel(xs);
    expect(fit.location).toBeCloseTo(2, 2);
    expect(fit.scale).toBeCloseTo(0.5, 2);
    // The quantile inverts the distribution function exp(-exp(-(x - location) / scale)).
    const q = gumbelQuantile(law, 0.999);
    expect(Math.exp(-Math.exp(-(q - 2) / 0.5))).toBeCloseTo(0.999, 12);
  });

  it('rejects fewer than two values and p outside (0, 1)', () => {
    expect(() => fitGumbel([1, NaN])).toThrow('a Gumbel fit needs 2 or more values, got 1');
    expect(() => gumbelQuantile({ location: 0, scale: 1 }, 1)).toThrow(RangeError);
  });
});

describe('leaveOneOutMaxima', () => {
  it('equals the brute-force largest deviation of each run from the others (missing values and flat columns left out)', () => {
    // Readings in thousandths (no subnormal numbers, whose squares underflow differently in the two sums).
    const value = fc.oneof(fc.integer({ min: -1_000_000, max: 1_000_000 }).map((k) => k / 1000), fc.constant(NaN));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }).chain((p) => fc.array(fc.array(value, { minLength: p, maxLength: p }), { minLength: 2, maxLength: 12 })),
        (rows) => {
          const brute = rows.map((r, i) =>
            r.reduce((worst, v, j) => {
              if (!Number.isFinite(v)) return worst;
              const others = rows.filter((_, k) => k !== i).map((o) => o[j]!).filter(Number.isFinite);
              if (others.length < 3) return worst;
              const mean = others.reduce((a, b) => a + b, 0) / others.length;
              const variance = others.reduce((a, b) => a + (b - mean) ** 2, 0) / (others.length - 1);
              if (!(variance > 0 && Math.sqrt(variance) > 1e-7 * Math.abs(mean))) return worst;
              return Math.max(worst, Math.abs(v - mean) / Math.sqrt(variance));
            }, 0),
          );
          const fast = leaveOneOutMaxima(rows);
          fast.forEach((m, i) => expect(Math.abs(m - brute[i]!)).toBeLessThanOrEqual(1e-6 * Math.max(1, brute[i]!)));
        },
      ),
      { seed: 20261127, numRuns: 300 },
    );
  });
});

describe('calibratedFamilyWidth', () => {
  const alpha = 1 / 200;

  it('for normal indicators lands near the Bonferroni width', () => {
    const phaseOne = table(90, 100, normal(uniforms(1)));
    const { width } = calibratedFamilyWidth(leaveOneOutMaxima(phaseOne), alpha);
    const bonferroni = normalQuantile(1 - alpha / 200);
    expect(width / bonferroni).toBeGreaterThan(0.85);
    expect(width / bonferroni).toBeLessThan(1.25);
  });

  it('for Gumbel-tailed indicators widens the limits to hold the family at its alpha, where Bonferroni under normality does not', () => {
    const draw = maxOfExponentials(uniforms(2));
    const phaseOne = table(90, 100, draw);
    const fresh = table(4_000, 100, draw);
    const { width } = calibratedFamilyWidth(leaveOneOutMaxima(phaseOne), alpha);
    const bonferroni = normalQuantile(1 - alpha / 200);
    expect(width).toBeGreaterThan(1.3 * bonferroni);
    // Normal-theory limits spend the family's budget many times over on such statistics ...
    expect(exceedance(phaseOne, fresh, bonferroni)).toBeGreaterThan(10 * alpha);
    // ... the calibrated width stays within a few times alpha (Phase I of 90 runs estimates the law).
    expect(exceedance(phaseOne, fresh, width)).toBeLessThan(3 * alpha);
  });
});
