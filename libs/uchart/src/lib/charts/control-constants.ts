import { c4 } from '../constants';
import { ChartConfigError } from '../errors';
import { normalPdf, normalUpperTail } from '../distributions';

/**
 * Where d2 and d3 come from:
 * - `tabulated`: the tables R qcc uses (`.qcc.options$exp.R.unscaled`, `$se.R.unscaled`): d2 to three
 *   decimals as printed in the classic tables (Montgomery Appendix VI, ASTM), n = 2..25; d3 to seven
 *   decimals, n = 2..50. Reproduces qcc's printed limits to all their digits.
 * - `exact`: the moments of the range of n standard normal values by numerical integration (about
 *   1e-13), n = 2..100.
 */
export type RangeConstantsSource = 'tabulated' | 'exact';

/**
 * The one default d2 / d3 source of the library (the constants, the subgroup and moving-range charts and
 * every chart built on them): `tabulated`, qcc's tables, so that every default reproduces qcc's and the
 * textbooks' printed limits (which are computed from these 3-decimal d2 values). `exact` is there on
 * request, and is needed for R-chart constants beyond n = 25 (d2) or 50 (d3).
 */
export const DEFAULT_RANGE_CONSTANTS: RangeConstantsSource = 'tabulated';

/** Mean (d2) and standard deviation (d3) of the range of n independent standard normal values. */
export interface RangeMoments {
  readonly d2: number;
  readonly d3: number;
}

/**
 * Shewhart control-chart constants for subgroup size n (normal theory, 3-sigma), as tabulated in
 * Montgomery, Introduction to Statistical Quality Control, Appendix VI:
 * A = 3/sqrt(n), A2 = 3/(d2 sqrt(n)), A3 = 3/(c4 sqrt(n)), B3/B4 = 1 -/+ 3 sqrt(1 - c4^2)/c4,
 * B5/B6 = c4 -/+ 3 sqrt(1 - c4^2), D1/D2 = d2 -/+ 3 d3, D3/D4 = 1 -/+ 3 d3/d2, E2 = 3/d2; lower factors
 * clamped at 0.
 */
export interface ControlConstants {
  readonly n: number;
  readonly A: number;
  readonly A2: number;
  readonly A3: number;
  readonly c4: number;
  readonly B3: number;
  readonly B4: number;
  readonly B5: number;
  readonly B6: number;
  readonly d2: number;
  readonly d3: number;
  readonly D1: number;
  readonly D2: number;
  readonly D3: number;
  readonly D4: number;
  readonly E2: number;
}

/** Largest subgroup size for `exact` range moments (the integration domain is sized for it). */
export const MAX_EXACT_RANGE_N = 100;

// qcc's .qcc.options (R/utilities.R, github.com/luca-scr/qcc): index n - 2.
// prettier-ignore
const QCC_D2 = [
  1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078, 3.173, 3.258, 3.336, 3.407, 3.472, 3.532,
  3.588, 3.640, 3.689, 3.735, 3.778, 3.819, 3.858, 3.895, 3.931,
];
// prettier-ignore
const QCC_D3 = [
  0.8525033, 0.8883697, 0.8798108, 0.8640855, 0.8480442, 0.8332108, 0.8198378, 0.8078413, 0.7970584,
  0.7873230, 0.7784873, 0.7704257, 0.7630330, 0.7562217, 0.7499188, 0.7440627, 0.7386021, 0.7334929,
  0.7286980, 0.7241851, 0.7199267, 0.7158987, 0.7120802, 0.7084528, 0.7050004, 0.7017086, 0.6985648,
  0.6955576, 0.6926770, 0.6899137, 0.6872596, 0.6847074, 0.6822502, 0.6798821, 0.6775973, 0.6753910,
  0.6732584, 0.6711952, 0.6691976, 0.6672619, 0.6653848, 0.6635632, 0.6617943, 0.6600754, 0.6584041,
  0.6567780, 0.6551950, 0.6536532, 0.6521506,
];

/** Largest n with a tabulated d2 (qcc, Montgomery, ASTM: 25). */
export const MAX_TABULATED_D2_N = QCC_D2.length + 1;
/** Largest n with a tabulated d3 (qcc: 50). */
export const MAX_TABULATED_D3_N = QCC_D3.length + 1;

function checkSize(n: number, max: number, what: string): void {
  if (!(Number.isInteger(n) && n >= 2 && n <= max)) {
    throw new ChartConfigError(`${what} needs an integer subgroup size in [2, ${max}], got ${n}`);
  }
}

// Integration grids. The integrands are analytic and decay like the normal density, so the
// trapezoid rule on the whole line converges geometrically; |x| <= 10 loses below 1e-20 for n <= 100.
const X_MAX = 10;
const X_STEP = 1 / 8;
// The range's upper tail P(W > w) is below 1e-20 beyond w = 20 for n <= 100.
const W_MAX = 20;
const GL_ORDER = 12;

let gaussLegendre: { nodes: Float64Array; weights: Float64Array } | undefined;

/** Gauss-Legendre nodes and weights on [-1, 1] (Newton on the Legendre polynomial). */
function legendre(): { nodes: Float64Array; weights: Float64Array } {
  if (gaussLegendre) return gaussLegendre;
  const m = GL_ORDER;
  const nodes = new Float64Array(m);
  const weights = new Float64Array(m);
  for (let i = 0; i < m; i++) {
    let x = Math.cos((Math.PI * (i + 0.75)) / (m + 0.5));
    let dp = 0;
    for (let iter = 0; iter < 100; iter++) {
      let p0 = 1;
      let p1 = x;
      for (let k = 2; k <= m; k++) {
        const p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = (m * (x * p1 - p0)) / (x * x - 1);
      const dx = p1 / dp;
      x -= dx;
      if (Math.abs(dx) < 1e-16) break;
    }
    nodes[i] = x;
    weights[i] = 2 / ((1 - x * x) * dp * dp);
  }
  gaussLegendre = { nodes, weights };
  return gaussLegendre;
}

/** Q(t) = P(Z > t) (full relative precision for t >= 0). */
const Q = normalUpperTail;

function integrateRangeMoments(n: number): RangeMoments {
  const steps = Math.round(X_MAX / X_STEP);
  // Upper tails and densities at the grid points |x_k| = k h, shared by both integrals.
  const qGrid = new Float64Array(steps + 1);
  const pdf = new Float64Array(steps + 1);
  for (let k = 0; k <= steps; k++) {
    qGrid[k] = Q(k * X_STEP);
    pdf[k] = normalPdf(k * X_STEP);
  }
  // d2 = integral of 1 - Phi(x)^n - (1 - Phi(x))^n, an even function of x.
  let m1 = 0;
  for (let k = 0; k <= steps; k++) {
    const q = qGrid[k];
    const f = -Math.expm1(n * Math.log1p(-q)) - q ** n;
    m1 += k === 0 ? f : 2 * f;
  }
  const d2 = m1 * X_STEP;
  // E[W^2] = 2 integral over w > 0 of w P(W > w), with P(W <= w) = n int phi(x) P(x < Z <= x + w)^(n-1) dx;
  // P(x < Z <= x + w) comes from the small tails so that neither end loses precision.
  const { nodes, weights } = legendre();
  let m2 = 0;
  for (let panel = 0; panel < W_MAX; panel++) {
    let panelSum = 0;
    for (let j = 0; j < GL_ORDER; j++) {
      const w = panel + 0.5 * (nodes[j] + 1);
      let cdf = 0;
      for (let k = -steps; k <= steps; k++) {
        const b = k * X_STEP + w;
        let mass: number;
        if (k >= 0) mass = qGrid[k] - Q(b);
        else if (b <= 0) mass = Q(-b) - qGrid[-k];
        else mass = 1 - qGrid[-k] - Q(b);
        cdf += pdf[k < 0 ? -k : k] * mass ** (n - 1);
      }
      panelSum += 0.5 * weights[j] * w * (1 - n * X_STEP * cdf);
    }
    m2 += panelSum;
    // P(W > w) decays faster than a normal tail: once a panel adds nothing, later ones add less.
    if (panelSum < 1e-17 * m2) break;
  }
  const ew2 = 2 * m2;
  return Object.freeze({ d2, d3: Math.sqrt(ew2 - d2 * d2) });
}

const exactCache = new Map<number, RangeMoments>();

/**
 * d2 and d3 for subgroup size n by numerical integration of the distribution of the range of n
 * standard normal values (trapezoid rule on the line, Gauss-Legendre over the range); absolute error
 * about 1e-13 (checked against the closed forms for n = 2, 3). Computed once per n and cached (about
 * 10 ms per n).
 *
 * @throws {@link ChartConfigError} unless n is an integer in [2, {@link MAX_EXACT_RANGE_N}].
 */
export function rangeMoments(n: number): RangeMoments {
  checkSize(n, MAX_EXACT_RANGE_N, 'exact d2 / d3');
  let m = exactCache.get(n);
  if (!m) {
    m = integrateRangeMoments(n);
    exactCache.set(n, m);
  }
  return m;
}

/**
 * d2 (n <= 25) and d3 (n <= 50) from the tables R qcc uses; see {@link RangeConstantsSource}.
 * `d2` is NaN for 25 < n <= 50.
 *
 * @throws {@link ChartConfigError} unless n is an integer in [2, 50].
 */
export function tabulatedRangeMoments(n: number): RangeMoments {
  checkSize(n, MAX_TABULATED_D3_N, 'tabulated d2 / d3');
  return { d2: n <= MAX_TABULATED_D2_N ? QCC_D2[n - 2] : NaN, d3: QCC_D3[n - 2] };
}

/**
 * d2 and d3 of subgroup size n from `source` (default {@link DEFAULT_RANGE_CONSTANTS}).
 *
 * @throws {@link ChartConfigError} for n outside the source's range (tabulated d2: 2..25).
 */
export function rangeConstants(
  n: number,
  source: RangeConstantsSource = DEFAULT_RANGE_CONSTANTS,
): RangeMoments {
  if (source === 'exact') return rangeMoments(n);
  checkSize(n, MAX_TABULATED_D2_N, 'tabulated d2');
  return tabulatedRangeMoments(n);
}

/**
 * All Shewhart constants for subgroup size n; d2 and d3 from `source` (default `tabulated`, the
 * lib-wide default: see {@link DEFAULT_RANGE_CONSTANTS}), c4 always exact ({@link c4}).
 *
 * @throws {@link ChartConfigError} for n outside the source's range (tabulated: 2..25; use `exact`
 *   up to {@link MAX_EXACT_RANGE_N}).
 */
export function controlConstants(
  n: number,
  source: RangeConstantsSource = DEFAULT_RANGE_CONSTANTS,
): ControlConstants {
  const { d2, d3 } = rangeConstants(n, source);
  const c = c4(n);
  const s = Math.sqrt(1 - c * c);
  const rootN = Math.sqrt(n);
  return Object.freeze({
    n,
    A: 3 / rootN,
    A2: 3 / (d2 * rootN),
    A3: 3 / (c * rootN),
    c4: c,
    B3: Math.max(0, 1 - (3 * s) / c),
    B4: 1 + (3 * s) / c,
    B5: Math.max(0, c - 3 * s),
    B6: c + 3 * s,
    d2,
    d3,
    D1: Math.max(0, d2 - 3 * d3),
    D2: d2 + 3 * d3,
    D3: Math.max(0, 1 - (3 * d3) / d2),
    D4: 1 + (3 * d3) / d2,
    E2: 3 / d2,
  });
}
