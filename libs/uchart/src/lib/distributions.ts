/**
 * Distribution functions for control limits, constants and capability intervals, in double precision.
 * Published algorithms, no tuning:
 * - standard normal CDF: W. J. Cody, "Rational Chebyshev approximations for the error function", Math.
 *   Comp. 23 (1969), as in Cody's ANORM (ACM TOMS 715, 1993); relative error about 1e-16 in both tails;
 * - standard normal quantile: M. J. Wichura, "Algorithm AS 241: the percentage points of the normal
 *   distribution", Applied Statistics 37 (1988), PPND16; relative error about 1e-16;
 * - regularized incomplete beta and gamma functions: Numerical Recipes, 3rd ed., sections 6.2 and 6.4
 *   (series / modified Lentz continued fractions), and their inverses (NR's starting values, then
 *   safeguarded Halley iterations), giving Beta, F and chi-square quantiles.
 *
 * Upper quantiles are what control limits need, so every inverse works on the smaller tail: for
 * p > 0.5 it solves the upper-tail equation for the complement variable directly. Quantiles at
 * p = 1 - alpha therefore keep full relative precision for small alpha. Relative accuracy is about
 * 1e-13 for parameters up to a few hundred (checked against closed forms in the tests).
 *
 * Invalid arguments (p outside [0, 1], non-positive shape or degrees of freedom) give NaN, as Math.*
 * functions do; callers validate their options before calling these. An iteration that does not
 * converge (never expected) throws `ConvergenceError`.
 */
import { logGamma } from './constants';
import { ConvergenceError } from './errors';

const SQRT_32 = Math.sqrt(32);
const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);

// Cody (1993), ANORM: coefficients of the rational approximations (the published 20-digit values,
// written as the shortest decimals of the same doubles).
const CODY_A = [
  2.2352520354606837, 161.02823106855587, 1067.6894854603709, 18154.98125334356, 0.06568233791820745,
];
const CODY_B = [47.202581904688245, 976.0985517377767, 10260.932208618979, 45507.78933502673];
const CODY_C = [
  0.39894151208813466, 8.883149794388377, 93.50665613217785, 597.2702763948002, 2494.5375852903726,
  6848.190450536283, 11602.65143764735, 9842.714838383978, 1.0765576773720192e-8,
];
const CODY_D = [
  22.266688044328117, 235.387901782625, 1519.3775994075547, 6485.558298266761, 18615.571640885097,
  34900.95272114598, 38912.00328609327, 19685.429676859992,
];
const CODY_P = [
  0.215898534057957, 0.12740116116024736, 0.022235277870649807, 0.0014216191932278934, 2.9112874951168793e-5,
  0.023073441764940174,
];
const CODY_Q = [
  1.284260096144911, 0.4682382124808651, 0.06598813786892856, 0.0037823963320275824, 7.297515550839662e-5,
];

/** exp(-x^2 / 2) without the cancellation of squaring x in one piece (Cody). */
function gaussTail(x: number): number {
  const xsq = Math.trunc(x * 16) / 16;
  const del = (x - xsq) * (x + xsq);
  return Math.exp(-xsq * xsq * 0.5) * Math.exp(-del * 0.5);
}

/**
 * Upper tail of the standard normal distribution, P(Z > y) for y >= 0, with full relative precision
 * (Cody); 0 beyond y = 38.5 (underflow).
 */
function upperTailNonNegative(y: number): number {
  if (y <= 0.67448975) {
    let xnum = 0;
    let xden = 0;
    if (y > 1.1102230246251565e-16) {
      const ysq = y * y;
      xnum = CODY_A[4] * ysq;
      xden = ysq;
      for (let i = 0; i < 3; i++) {
        xnum = (xnum + CODY_A[i]) * ysq;
        xden = (xden + CODY_B[i]) * ysq;
      }
    }
    return 0.5 - (y * (xnum + CODY_A[3])) / (xden + CODY_B[3]);
  }
  if (y <= SQRT_32) {
    let xnum = CODY_C[8] * y;
    let xden = y;
    for (let i = 0; i < 7; i++) {
      xnum = (xnum + CODY_C[i]) * y;
      xden = (xden + CODY_D[i]) * y;
    }
    return (gaussTail(y) * (xnum + CODY_C[7])) / (xden + CODY_D[7]);
  }
  if (y >= 38.5) return 0;
  const ysq = 1 / (y * y);
  let xnum = CODY_P[5] * ysq;
  let xden = ysq;
  for (let i = 0; i < 4; i++) {
    xnum = (xnum + CODY_P[i]) * ysq;
    xden = (xden + CODY_Q[i]) * ysq;
  }
  const t = (ysq * (xnum + CODY_P[4])) / (xden + CODY_Q[4]);
  return (gaussTail(y) * (INV_SQRT_2PI - t)) / y;
}

/**
 * P(Z > x) for the standard normal Z: full relative precision where it is small (x > 0); for x < 0
 * it is 1 - P(Z <= x).
 */
export function normalUpperTail(x: number): number {
  if (Number.isNaN(x)) return NaN;
  return x >= 0 ? upperTailNonNegative(x) : 1 - upperTailNonNegative(-x);
}

/**
 * Lower and upper tail of the standard normal distribution at `x`: `[P(Z <= x), P(Z > x)]`, each with
 * full relative precision (the small tail is never computed as 1 - the large one).
 */
export function normalTails(x: number): [number, number] {
  if (Number.isNaN(x)) return [NaN, NaN];
  const small = upperTailNonNegative(Math.abs(x));
  return x > 0 ? [1 - small, small] : [small, 1 - small];
}

/** Standard normal CDF, P(Z <= x). */
export function normalCdf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  return x > 0 ? 1 - upperTailNonNegative(x) : upperTailNonNegative(-x);
}

/** Standard normal density. */
export function normalPdf(x: number): number {
  return INV_SQRT_2PI * Math.exp(-0.5 * x * x);
}

// Wichura (1988), Algorithm AS 241, PPND16: coefficients of the rational approximations (the
// published 20-digit values, written as the shortest decimals of the same doubles).
const AS241_A = [
  3.3871328727963665, 133.14166789178438, 1971.5909503065513, 13731.69376550946, 45921.95393154987,
  67265.7709270087, 33430.57558358813, 2509.0809287301227,
];
const AS241_B = [
  1, 42.31333070160091, 687.1870074920579, 5394.196021424751, 21213.794301586597, 39307.89580009271,
  28729.085735721943, 5226.495278852854,
];
const AS241_C = [
  1.4234371107496835, 4.630337846156546, 5.769497221460691, 3.6478483247632045, 1.2704582524523684,
  0.2417807251774506, 0.022723844989269184, 0.0007745450142783414,
];
const AS241_D = [
  1, 2.053191626637759, 1.6763848301838038, 0.6897673349851, 0.14810397642748008, 0.015198666563616457,
  0.0005475938084995345, 1.0507500716444169e-9,
];
const AS241_E = [
  6.657904643501103, 5.463784911164114, 1.7848265399172913, 0.29656057182850487, 0.026532189526576124,
  0.0012426609473880784, 0.000027115555687434876, 2.0103343992922881e-7,
];
const AS241_F = [
  1, 0.599832206555888, 0.1369298809227358, 0.014875361290850615, 0.0007868691311456133,
  0.000018463183175100548, 1.421511758316446e-7, 2.0442631033899397e-15,
];

function poly(c: readonly number[], x: number): number {
  let v = c[c.length - 1];
  for (let i = c.length - 2; i >= 0; i--) v = v * x + c[i];
  return v;
}

/**
 * The p-quantile of the standard normal distribution, z with P(Z <= z) = p (AS 241, relative accuracy
 * about 1e-16). -Infinity / +Infinity at p = 0 / 1, NaN outside [0, 1].
 */
export function normalQuantile(p: number): number {
  if (!(p >= 0 && p <= 1)) return NaN;
  if (p === 0) return -Infinity;
  if (p === 1) return Infinity;
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    return (q * poly(AS241_A, r)) / poly(AS241_B, r);
  }
  let r = Math.sqrt(-Math.log(q < 0 ? p : 1 - p));
  let value: number;
  if (r <= 5) {
    r -= 1.6;
    value = poly(AS241_C, r) / poly(AS241_D, r);
  } else {
    r -= 5;
    value = poly(AS241_E, r) / poly(AS241_F, r);
  }
  return q < 0 ? -value : value;
}

const EPS = 2 ** -52;
const FPMIN = 1e-300;
const MAX_ITERATIONS = 10_000;

function logBeta(a: number, b: number): number {
  return logGamma(a) + logGamma(b) - logGamma(a + b);
}

/** Continued fraction of the incomplete beta function (NR betacf, modified Lentz). */
function betaContinuedFraction(x: number, a: number, b: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < FPMIN) d = FPMIN;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= MAX_ITERATIONS; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < FPMIN) d = FPMIN;
    c = 1 + aa / c;
    if (Math.abs(c) < FPMIN) c = FPMIN;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < FPMIN) d = FPMIN;
    c = 1 + aa / c;
    if (Math.abs(c) < FPMIN) c = FPMIN;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) <= EPS) return h;
  }
  throw new ConvergenceError(`incomplete beta continued fraction (x = ${x}, a = ${a}, b = ${b})`);
}

/** Both tails of the Beta(a, b) distribution at x, given y = 1 - x exactly. */
function betaTails(x: number, y: number, a: number, b: number): { lower: number; upper: number } {
  if (x <= 0) return { lower: 0, upper: 1 };
  if (y <= 0) return { lower: 1, upper: 0 };
  const front = Math.exp(a * Math.log(x) + b * Math.log(y) - logBeta(a, b));
  if (x < (a + 1) / (a + b + 2)) {
    const lower = (front * betaContinuedFraction(x, a, b)) / a;
    return { lower, upper: 1 - lower };
  }
  const upper = (front * betaContinuedFraction(y, b, a)) / b;
  return { lower: 1 - upper, upper };
}

/**
 * Regularized incomplete beta function I_x(a, b) = P(X <= x) for X ~ Beta(a, b); a, b > 0, x in [0, 1].
 */
export function regularizedIncompleteBeta(x: number, a: number, b: number): number {
  if (!(a > 0 && b > 0 && x >= 0 && x <= 1)) return NaN;
  return betaTails(x, 1 - x, a, b).lower;
}

/**
 * Solves I_x(a, b) = p for x, for p <= 0.5 (the lower tail is then the accurate one). Returns x.
 */
function betaLowerInverse(p: number, a: number, b: number): number {
  if (p <= 0) return 0;
  const lbeta = logBeta(a, b);
  let x: number;
  // Starting value: NR invbetai.
  if (a >= 1 && b >= 1) {
    const t = Math.sqrt(-2 * Math.log(p));
    let z = (2.30753 + t * 0.27061) / (1 + t * (0.99229 + t * 0.04481)) - t;
    z = -z;
    const al = (z * z - 3) / 6;
    const h = 2 / (1 / (2 * a - 1) + 1 / (2 * b - 1));
    const w = (z * Math.sqrt(al + h)) / h - (1 / (2 * b - 1) - 1 / (2 * a - 1)) * (al + 5 / 6 - 2 / (3 * h));
    x = a / (a + b * Math.exp(2 * w));
  } else {
    const lna = Math.log(a / (a + b));
    const lnb = Math.log(b / (a + b));
    const t = Math.exp(a * lna) / a;
    const u = Math.exp(b * lnb) / b;
    const w = t + u;
    x = p < t / w ? Math.pow(a * w * p, 1 / a) : 1 - Math.pow(b * w * (1 - p), 1 / b);
  }
  return halleyOnUnitInterval(x, a, b, lbeta, (xx) => betaTails(xx, 1 - xx, a, b).lower - p);
}

/** Safeguarded Halley iteration for an incomplete-beta equation f(x) = 0, f increasing on (0, 1). */
function halleyOnUnitInterval(
  start: number,
  a: number,
  b: number,
  lbeta: number,
  f: (x: number) => number,
): number {
  let lo = 0;
  let hi = 1;
  let x = start;
  for (let iter = 0; iter < 300; iter++) {
    if (!(x > lo && x < hi)) x = 0.5 * (lo + hi);
    const err = f(x);
    if (err === 0) return x;
    if (err < 0) lo = x;
    else hi = x;
    const pdf = Math.exp((a - 1) * Math.log(x) + (b - 1) * Math.log1p(-x) - lbeta);
    let next: number;
    if (pdf > 0 && Number.isFinite(pdf)) {
      const u = err / pdf;
      const step = u / (1 - 0.5 * Math.min(1, u * ((a - 1) / x - (b - 1) / (1 - x))));
      next = x - step;
      if (Math.abs(step) <= 4 * EPS * x) return next > lo && next < hi ? next : x;
    } else {
      next = NaN;
    }
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (hi - lo <= 4 * EPS * Math.max(lo, FPMIN)) return next;
    x = next;
  }
  throw new ConvergenceError(`inverse incomplete beta (a = ${a}, b = ${b})`);
}

/**
 * The p-quantile of Beta(a, b) as the pair (x, 1 - x), each with full relative precision: for
 * p > 0.5 the complement 1 - x is solved from the upper tail, I_{1-x}(b, a) = 1 - p.
 */
function betaQuantilePair(p: number, a: number, b: number): { x: number; y: number } {
  if (p <= 0.5) {
    const x = betaLowerInverse(p, a, b);
    return { x, y: 1 - x };
  }
  const y = betaLowerInverse(1 - p, b, a);
  return { x: 1 - y, y };
}

/** The p-quantile of Beta(a, b) (inverse of the regularized incomplete beta function). */
export function betaQuantile(p: number, a: number, b: number): number {
  if (!(a > 0 && b > 0 && p >= 0 && p <= 1)) return NaN;
  if (p === 0) return 0;
  if (p === 1) return 1;
  return betaQuantilePair(p, a, b).x;
}

/** The p-quantile of the F distribution with (d1, d2) degrees of freedom (real, > 0). */
export function fQuantile(p: number, d1: number, d2: number): number {
  if (!(d1 > 0 && d2 > 0 && p >= 0 && p <= 1)) return NaN;
  if (p === 0) return 0;
  if (p === 1) return Infinity;
  const { x, y } = betaQuantilePair(p, d1 / 2, d2 / 2);
  return (d2 / d1) * (x / y);
}

/** P(F <= f) for F ~ F(d1, d2). */
export function fCdf(f: number, d1: number, d2: number): number {
  if (!(d1 > 0 && d2 > 0) || Number.isNaN(f)) return NaN;
  if (f <= 0) return 0;
  if (f === Infinity) return 1;
  // x = d1 f / (d1 f + d2), 1 - x = d2 / (d1 f + d2), both without cancellation.
  const den = d1 * f + d2;
  return betaTails((d1 * f) / den, d2 / den, d1 / 2, d2 / 2).lower;
}

/** Both tails of the Gamma(a, 1) distribution at x: P(a, x) and Q(a, x). */
function gammaTails(a: number, x: number): { lower: number; upper: number } {
  if (x <= 0) return { lower: 0, upper: 1 };
  if (x === Infinity) return { lower: 1, upper: 0 };
  const lnFront = -x + a * Math.log(x) - logGamma(a);
  if (x < a + 1) {
    // Series (NR gser).
    let ap = a;
    let del = 1 / a;
    let sum = del;
    for (let n = 0; n < MAX_ITERATIONS; n++) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (Math.abs(del) < Math.abs(sum) * EPS) {
        const lower = sum * Math.exp(lnFront);
        return { lower, upper: 1 - lower };
      }
    }
    throw new ConvergenceError(`incomplete gamma series (a = ${a}, x = ${x})`);
  }
  // Continued fraction (NR gcf, modified Lentz).
  let b = x + 1 - a;
  let c = 1 / FPMIN;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i <= MAX_ITERATIONS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < FPMIN) d = FPMIN;
    c = b + an / c;
    if (Math.abs(c) < FPMIN) c = FPMIN;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) <= EPS) {
      const upper = Math.exp(lnFront) * h;
      return { lower: 1 - upper, upper };
    }
  }
  throw new ConvergenceError(`incomplete gamma continued fraction (a = ${a}, x = ${x})`);
}

/** Regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a); a > 0, x >= 0. */
export function regularizedGammaP(a: number, x: number): number {
  if (!(a > 0 && x >= 0)) return NaN;
  return gammaTails(a, x).lower;
}

/** Regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), accurate in the upper tail. */
export function regularizedGammaQ(a: number, x: number): number {
  if (!(a > 0 && x >= 0)) return NaN;
  return gammaTails(a, x).upper;
}

/** Solves P(a, x) = p (p <= 0.5) or Q(a, x) = 1 - p (p > 0.5) for x (NR invgammp start, Halley). */
function gammaQuantile(p: number, a: number): number {
  const gln = logGamma(a);
  const upperTail = p > 0.5;
  const target = upperTail ? 1 - p : p;
  let x: number;
  const a1 = a - 1;
  if (a > 1) {
    const t = Math.sqrt(-2 * Math.log(target));
    let z = (2.30753 + t * 0.27061) / (1 + t * (0.99229 + t * 0.04481)) - t;
    if (!upperTail) z = -z;
    x = Math.max(1e-3, a * Math.pow(1 - 1 / (9 * a) - z / (3 * Math.sqrt(a)), 3));
  } else {
    const t = 1 - a * (0.253 + a * 0.12);
    x = p < t ? Math.pow(p / t, 1 / a) : 1 - Math.log1p(-(p - t) / (1 - t));
  }
  // f(x) = P(a, x) - p, increasing; evaluated on the accurate tail.
  const f = (xx: number): number => {
    const tails = gammaTails(a, xx);
    return upperTail ? target - tails.upper : tails.lower - target;
  };
  let lo = 0;
  let hi = Infinity;
  for (let iter = 0; iter < 300; iter++) {
    if (!(x > lo && x < hi)) x = hi === Infinity ? Math.max(2 * lo, 1) : 0.5 * (lo + hi);
    const err = f(x);
    if (err === 0) return x;
    if (err < 0) lo = x;
    else hi = x;
    const pdf = Math.exp(-x + a1 * Math.log(x) - gln);
    let next = NaN;
    if (pdf > 0 && Number.isFinite(pdf)) {
      const u = err / pdf;
      const step = u / (1 - 0.5 * Math.min(1, u * (a1 / x - 1)));
      next = x - step;
      if (Math.abs(step) <= 4 * EPS * x && next > lo && next < hi) return next;
    }
    if (!(next > lo && next < hi)) next = hi === Infinity ? 2 * Math.max(lo, x) : 0.5 * (lo + hi);
    if (hi - lo <= 4 * EPS * Math.max(lo, FPMIN)) return next;
    x = next;
  }
  throw new ConvergenceError(`inverse incomplete gamma (a = ${a}, p = ${p})`);
}

/** The p-quantile of the chi-square distribution with k > 0 (real) degrees of freedom. */
export function chiSquareQuantile(p: number, k: number): number {
  if (!(k > 0 && p >= 0 && p <= 1)) return NaN;
  if (p === 0) return 0;
  if (p === 1) return Infinity;
  return 2 * gammaQuantile(p, k / 2);
}

/** P(X <= x) for X ~ chi-square(k). */
export function chiSquareCdf(x: number, k: number): number {
  if (!(k > 0) || Number.isNaN(x)) return NaN;
  return x <= 0 ? 0 : gammaTails(k / 2, x / 2).lower;
}
