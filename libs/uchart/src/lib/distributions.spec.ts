import fc from 'fast-check';
import {
  betaQuantile,
  chiSquareCdf,
  chiSquareQuantile,
  fCdf,
  fQuantile,
  normalCdf,
  normalQuantile,
  normalTails,
  normalUpperTail,
  regularizedGammaP,
  regularizedGammaQ,
  regularizedIncompleteBeta,
} from './distributions';

/** |actual - expected| <= tol * |expected| (relative), or tol absolute for expected 0. */
function expectRelative(actual: number, expected: number, tol: number): void {
  const err = expected === 0 ? Math.abs(actual) : Math.abs(actual - expected) / Math.abs(expected);
  if (!(err <= tol)) throw new Error(`expected ${expected}, got ${actual} (relative error ${err})`);
  expect(err).toBeLessThanOrEqual(tol);
}

// Probabilities used for control limits, including far tails.
const PS = [0.5, 0.9, 0.95, 0.99, 0.9973, 0.999, 1 - 1e-6, 1 - 1e-10];

describe('normal distribution', () => {
  it('CDF: symmetry, the median and both tails with full relative precision', () => {
    expect(normalCdf(0)).toBe(0.5);
    for (const x of [0.1, 0.5, 0.67, 0.7, 1, 2.5, 5, 5.7, 8, 20]) {
      const [lo, up] = normalTails(x);
      expect(lo + up).toBeCloseTo(1, 15);
      expect(normalCdf(-x)).toBe(up);
      expect(normalUpperTail(x)).toBe(up);
    }
    // Q(x) ~ phi(x) / x (1 - 1/x^2 + 3/x^4 - 15/x^6 ...) in the far tail.
    const x = 30;
    const phi = Math.exp(-450) / Math.sqrt(2 * Math.PI);
    const asym =
      (phi / x) *
      (1 - 1 / x ** 2 + 3 / x ** 4 - 15 / x ** 6 + 105 / x ** 8 - 945 / x ** 10 + 10395 / x ** 12);
    expect(normalUpperTail(x) / asym).toBeCloseTo(1, 12);
    expect(normalUpperTail(40)).toBe(0);
    expect(normalCdf(NaN)).toBeNaN();
  });

  it('quantile inverts the CDF to 1e-14 and has the textbook values', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963984540054, 14);
    expect(normalQuantile(0.95)).toBeCloseTo(1.6448536269514722, 14);
    expect(normalQuantile(0.5)).toBe(0);
    for (const p of [1e-300, 1e-20, 1e-8, 0.001, 0.02, 0.3, 0.425, 0.5, 0.9, 0.999, 1 - 1e-12]) {
      const z = normalQuantile(p);
      const back = p < 0.5 ? normalCdf(z) : normalUpperTail(z);
      expect(back / (p < 0.5 ? p : 1 - p)).toBeCloseTo(1, 10);
    }
    expect(normalQuantile(0)).toBe(-Infinity);
    expect(normalQuantile(1)).toBe(Infinity);
    expect(normalQuantile(1.5)).toBeNaN();
  });

  it('quantile: well-known constants to 1e-15 relative, exact symmetry, the deep lower tail', () => {
    expectRelative(normalQuantile(0.975), 1.959963984540054, 1e-15);
    expectRelative(normalQuantile(0.95), 1.6448536269514722, 1e-15);
    expectRelative(normalQuantile(0.99), 2.3263478740408408, 1e-15);
    expectRelative(normalQuantile(0.999), 3.090232306167813, 1e-15);
    expect(normalQuantile(0.5)).toBe(0);
    // Exact symmetry where 1 - p is exact.
    for (const p of [2 ** -30, 0.0625, 0.125, 0.25]) expect(normalQuantile(p)).toBe(-normalQuantile(1 - p));
    // Deep lower tail (third AS 241 branch): Phi(-37.5) ~ 4.6e-308.
    expect(normalQuantile(1e-300)).toBeLessThan(-37);
  });
});

describe('chi-square distribution', () => {
  it('closed forms: P(1, x) = 1 - e^-x, df 2 quantile -2 ln(1 - p), df 1 quantile = z((1 + p) / 2)^2', () => {
    for (const x of [0.01, 0.5, 1, 3, 10, 40])
      expect(regularizedGammaP(1, x)).toBeCloseTo(-Math.expm1(-x), 14);
    for (const p of [0.001, 0.025, 0.5, 0.975, 0.999]) {
      expect(chiSquareQuantile(p, 2) / (-2 * Math.log1p(-p))).toBeCloseTo(1, 12);
      expect(chiSquareQuantile(p, 1) / normalQuantile((1 + p) / 2) ** 2).toBeCloseTo(1, 12);
    }
  });

  it('quantile inverts the CDF for integer and fractional df', () => {
    for (const df of [0.5, 1, 2.7, 11, 124, 180.3, 1000]) {
      for (const p of [0.005, 0.025, 0.5, 0.975, 0.995]) {
        expect(chiSquareCdf(chiSquareQuantile(p, df), df)).toBeCloseTo(p, 13);
      }
    }
    expect(chiSquareQuantile(0, 3)).toBe(0);
    expect(chiSquareQuantile(1, 3)).toBe(Infinity);
    expect(chiSquareQuantile(0.5, 0)).toBeNaN();
    expect(regularizedGammaP(-1, 1)).toBeNaN();
  });
});

describe('closed forms (exact references)', () => {
  it.each(PS)('chi-square(2) quantile = -2 ln(1 - p) at p = %p', (p) => {
    expectRelative(chiSquareQuantile(p, 2), -2 * Math.log1p(-p), 1e-13);
  });

  it.each(PS)('chi-square(1) quantile = z((1 + p) / 2)^2 at p = %p', (p) => {
    // z from the lower tail (1 - p) / 2, which is exact; 1 - (1 - p) / 2 would be rounded.
    const z = -normalQuantile((1 - p) / 2);
    expectRelative(chiSquareQuantile(p, 1), z * z, 1e-12);
  });

  it.each(PS)('F(2, nu) quantile = (nu / 2)((1 - p)^(-2 / nu) - 1) at p = %p', (p) => {
    for (const nu of [1, 3, 7, 28, 120]) {
      expectRelative(fQuantile(p, 2, nu), (nu / 2) * (Math.pow(1 - p, -2 / nu) - 1), 1e-12);
    }
  });

  it.each(PS)('F(1, 1) = tan^2(pi p / 2) and F(1, 2) = 2 p^2 / (1 - p^2) at p = %p', (p) => {
    // tan(pi p / 2) = 1 / tan(pi (1 - p) / 2), with 1 - p exact (p >= 0.5).
    expectRelative(fQuantile(p, 1, 1), Math.tan((Math.PI * (1 - p)) / 2) ** -2, 1e-12);
    expectRelative(fQuantile(p, 1, 2), (2 * p * p) / ((1 - p) * (1 + p)), 1e-12);
  });

  it.each(PS)(
    'Beta(a, 1) = p^(1/a), Beta(1, b) = 1 - (1 - p)^(1/b), Beta(1/2, 1/2) = sin^2(pi p / 2) at p = %p',
    (p) => {
      for (const s of [0.3, 1, 2.5, 40]) {
        expectRelative(betaQuantile(p, s, 1), Math.pow(p, 1 / s), 1e-13);
        expectRelative(betaQuantile(p, 1, s), -Math.expm1(Math.log1p(-p) / s), 1e-13);
        // Lower tail, where x itself is small.
        expectRelative(betaQuantile(1 - p, 1, s), -Math.expm1(Math.log(p) / s), 1e-12);
      }
      expectRelative(betaQuantile(p, 0.5, 0.5), Math.sin((Math.PI * p) / 2) ** 2, 1e-13);
      expectRelative(betaQuantile(1 - p, 0.5, 0.5), Math.sin((Math.PI * (1 - p)) / 2) ** 2, 1e-12);
    },
  );

  it('regularized incomplete beta: x^a, 1 - (1 - x)^b, 3x^2 - 2x^3, and I_1/2(a, a) = 1/2', () => {
    for (const x of [1e-8, 0.01, 0.3, 0.5, 0.77, 0.999]) {
      expectRelative(regularizedIncompleteBeta(x, 3.5, 1), Math.pow(x, 3.5), 1e-13);
      expectRelative(regularizedIncompleteBeta(x, 1, 4), -Math.expm1(4 * Math.log1p(-x)), 1e-13);
      expectRelative(regularizedIncompleteBeta(x, 2, 2), 3 * x * x - 2 * x * x * x, 1e-13);
    }
    for (const a of [0.5, 1, 7]) expectRelative(regularizedIncompleteBeta(0.5, a, a), 0.5, 1e-13);
    // Large parameters: ln Gamma(300) ~ 1400 carries its absolute rounding into the result.
    expectRelative(regularizedIncompleteBeta(0.5, 150, 150), 0.5, 1e-12);
    expect(regularizedIncompleteBeta(0, 2, 3)).toBe(0);
    expect(regularizedIncompleteBeta(1, 2, 3)).toBe(1);
  });

  it('regularized gamma: P(1, x) = 1 - e^-x, Q(2, x) = e^-x (1 + x), P(1/2, x^2 / 2) = erf-type identity', () => {
    for (const x of [1e-6, 0.1, 1, 5, 30, 200]) {
      expectRelative(regularizedGammaP(1, x), -Math.expm1(-x), 1e-13);
      expectRelative(regularizedGammaQ(2, x), Math.exp(-x) * (1 + x), 1e-12);
    }
    // P(1/2, z^2 / 2) = 2 Phi(z) - 1.
    expectRelative(regularizedGammaP(0.5, 1.959963984540054 ** 2 / 2), 0.95, 1e-13);
  });

  it('boundaries and invalid arguments', () => {
    expect(chiSquareQuantile(0, 3)).toBe(0);
    expect(chiSquareQuantile(1, 3)).toBe(Infinity);
    expect(fQuantile(1, 2, 3)).toBe(Infinity);
    expect(betaQuantile(1, 2, 3)).toBe(1);
    expect(normalQuantile(0)).toBe(-Infinity);
    expect(chiSquareQuantile(0.5, 0)).toBeNaN();
    expect(fQuantile(1.5, 2, 3)).toBeNaN();
    expect(betaQuantile(0.5, -1, 3)).toBeNaN();
    expect(regularizedIncompleteBeta(2, 1, 1)).toBeNaN();
  });
});

describe('round trips (fast-check, fixed seeds)', () => {
  const shape = fc.double({ min: 0.5, max: 300, noNaN: true });
  const upperTail = fc.double({ min: 1e-12, max: 0.5, noNaN: true });

  it('chi-square: the upper tail Q(k/2, q/2) at the (1 - alpha)-quantile q is alpha', () => {
    fc.assert(
      fc.property(shape, upperTail, (k, alpha) => {
        const q = chiSquareQuantile(1 - alpha, k);
        // 1 - alpha is rounded; compare with the probability actually requested.
        expectRelative(regularizedGammaQ(k / 2, q / 2), 1 - (1 - alpha), 1e-10);
      }),
      { seed: 11, numRuns: 300 },
    );
  });

  it('F: fCdf(fQuantile(p)) = p', () => {
    fc.assert(
      fc.property(shape, shape, fc.double({ min: 0.001, max: 0.999, noNaN: true }), (d1, d2, p) => {
        expectRelative(fCdf(fQuantile(p, d1, d2), d1, d2), p, 1e-11);
      }),
      { seed: 12, numRuns: 300 },
    );
  });

  it('Beta: I at the quantile is p, in both tails', () => {
    fc.assert(
      fc.property(shape, shape, upperTail, (a, b, alpha) => {
        expectRelative(regularizedIncompleteBeta(betaQuantile(alpha, a, b), a, b), alpha, 1e-10);
        // Upper tail through the F quantile, which keeps 1 - x exact: x / (1 - x) = (a / b) F.
        const f = fQuantile(1 - alpha, 2 * a, 2 * b);
        const y = 1 / (1 + (a / b) * f);
        expectRelative(regularizedIncompleteBeta(y, b, a), 1 - (1 - alpha), 1e-10);
      }),
      { seed: 13, numRuns: 300 },
    );
  });

  it('chi-square cdf inverts the quantile for moderate p', () => {
    fc.assert(
      fc.property(shape, fc.double({ min: 0.001, max: 0.999, noNaN: true }), (k, p) => {
        expectRelative(chiSquareCdf(chiSquareQuantile(p, k), k), p, 1e-11);
      }),
      { seed: 14, numRuns: 300 },
    );
  });
});
