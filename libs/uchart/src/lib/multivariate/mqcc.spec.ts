/**
 * Hotelling T² charts in one call (`mqcc`, `knownParameterT2`), published values reproduced to the
 * printed digits (`expectPrinted` / `expectSignificant`, ../../testing/printed.ts).
 *
 * Sources (every number asserted as printed was read from one of them):
 * - [QCC-MQCC] R package qcc 3.0 (github.com/luca-scr/qcc at commit af35099), reference page of mqcc()
 *   (docs/reference/mqcc.html) and the vignette (docs/articles/qcc.html, "Multivariate Quality Control
 *   Charts"): `q = mqcc(RyanMultivar, type = "T2")` prints Center, Covariance matrix, |S| and the
 *   control limits; the `newdata` calls print the prediction limits; `qcc(X1 | X2, type = "xbar",
 *   confidence.level = q$confidence.level^(1/2))` prints the two x-bar charts; `mqcc(boiler, type =
 *   "T2.single", confidence.level = 0.999, pred.limits = TRUE)` prints Center, Covariance, |S|, control
 *   and prediction limits. Formulas: R/mqcc.R `stats.T2`, `limits.T2`, `stats.T2.single`,
 *   `limits.T2.single`. Data: data/RyanMultivar.R, data/boiler.txt (../../testing/published-data.ts).
 * - [M111] Montgomery, Introduction to Statistical Quality Control, Example 11.1 and Table 11.1 (tensile
 *   strength x1 and diameter x2 of a textile fiber, m = 20 samples of n = 10), as reproduced in the
 *   public page scribd.com/document/89759664/Example-11-1: per sample x-bar1, x-bar2 and the T² column,
 *   computed by the book with the Phase I estimates it states (xbarbar1 = 115.59, xbarbar2 = 1.06,
 *   s1² = 1.23, s2² = 0.83, s12 = 0.79). Sample 18's T² is not legible in that copy and is not asserted.
 * - [NIST-CHI2] NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.6.7.4 "Critical Values of the
 *   Chi-Square Distribution" (upper-tail table, 3 decimals).
 */
import { ChartConfigError } from '../errors';
import { qcc } from '../charts/qcc';
import { expectPrinted, expectSignificant } from '../../testing/printed';
import { BOILER, RYAN_SUBGROUPS, RYAN_X1, RYAN_X2 } from '../../testing/published-data';
import { MultivariateInputError, NotPositiveDefiniteError } from './errors';
import { fitHotelling } from './hotelling';
import { knownT2Limit } from './limits';
import { knownParameterT2, mqcc, subgroupMeans } from './mqcc';

describe('subgrouped T² (type "T2"), RyanMultivar [QCC-MQCC]', () => {
  const q = mqcc(RYAN_SUBGROUPS);

  it('defaults as qcc: type T2 for subgroups, 20 groups of 4, confidence (1 - 0.0027)^2', () => {
    expect(q.type).toBe('T2');
    expect([q.groups, q.size, q.variables]).toEqual([20, 4, 2]);
    expect(q.confidenceLevel).toBeCloseTo((1 - 0.0027) ** 2, 15);
  });

  it('Center = 60.3750 18.4875; Covariance matrix 222.0333 103.11667 / 103.1167 56.57917; |S| = 1929.414', () => {
    expectPrinted(q.center[0], '60.3750');
    expectPrinted(q.center[1], '18.4875');
    // R prints the matrix column by column: column X1 "222.0333 103.1167", column X2 "103.11667 56.57917".
    expectSignificant(q.covariance[0][0], '222.0333');
    expectSignificant(q.covariance[1][0], '103.1167');
    expectSignificant(q.covariance[0][1], '103.11667');
    expectSignificant(q.covariance[1][1], '56.57917');
    expectSignificant(q.determinant, '1929.414');
  });

  it('Control limits: LCL 0, UCL 11.03976; Prediction limits: LPL 0, UPL 12.20184', () => {
    expect(q.limits.lcl).toBe(0);
    expectPrinted(q.limits.ucl, '11.03976');
    expect(q.predictionLimits.lcl).toBe(0);
    expectPrinted(q.predictionLimits.ucl, '12.20184');
  });

  it('the statistics are stats.T2 written out for p = 2 (qcc prints no T² values: derived, not printed)', () => {
    // n (s22 d1^2 - 2 s12 d1 d2 + s11 d2^2) / (s11 s22 - s12^2), with the pooled covariance averaged
    // over the subgroups' own covariances (divisor n - 1), as R/mqcc.R stats.T2 computes it.
    const mean = (v: readonly number[]) => v.reduce((a, b) => a + b, 0) / v.length;
    const m1 = RYAN_X1.map(mean);
    const m2 = RYAN_X2.map(mean);
    const c1 = mean(m1);
    const c2 = mean(m2);
    let s11 = 0;
    let s22 = 0;
    let s12 = 0;
    RYAN_X1.forEach((row, k) =>
      row.forEach((x1, i) => {
        const d1 = x1 - m1[k];
        const d2 = RYAN_X2[k][i] - m2[k];
        s11 += (d1 * d1) / 3 / 20;
        s22 += (d2 * d2) / 3 / 20;
        s12 += (d1 * d2) / 3 / 20;
      }),
    );
    const det = s11 * s22 - s12 * s12;
    const reference = m1.map((_, k) => {
      const d1 = m1[k] - c1;
      const d2 = m2[k] - c2;
      return (4 * (s22 * d1 * d1 - 2 * s12 * d1 * d2 + s11 * d2 * d2)) / det;
    });
    q.statistics.forEach((t2, k) => expect(t2).toBeCloseTo(reference[k], 10));
    // Subgroups 10 and 20 lie above the control limit (T² 63.76 and 13.04), no other does.
    expect(q.violations.beyondLimits).toEqual([9, 19]);
    expect(q.violations.beyondPredictionLimits).toEqual([9, 19]);
  });

  it('the x-bar charts at confidence conf^(1/2): X1 60.375, 14.93443, nsigmas 2.999977, 37.97352 / 82.77648; X2 18.4875, 7.139388, 7.7785 / 29.1965', () => {
    const level = Math.sqrt(q.confidenceLevel);
    const x1 = qcc(RYAN_X1, { type: 'xbar', confidenceLevel: level });
    expectPrinted(x1.center!, '60.375');
    expectSignificant(x1.stdDev!, '14.93443');
    expectPrinted(x1.nSigma, '2.999977');
    expectPrinted(x1.points[0].lcl, '37.97352');
    expectPrinted(x1.points[0].ucl, '82.77648');
    const x2 = qcc(RYAN_X2, { type: 'xbar', confidenceLevel: level });
    expectPrinted(x2.center!, '18.4875');
    expectSignificant(x2.stdDev!, '7.139388');
    expectPrinted(x2.points[0].lcl, '7.7785');
    expectPrinted(x2.points[0].ucl, '29.1965');
  });

  it('newdata is scored with the Phase I centre and covariance (the Phase I subgroups again give the Phase I T²)', () => {
    const qq = mqcc(RYAN_SUBGROUPS, { newdata: RYAN_SUBGROUPS.slice(0, 3) });
    expect(qq.newStatistics).toHaveLength(3);
    qq.newStatistics.forEach((t2, k) => expect(t2).toBeCloseTo(q.statistics[k], 12));
    expect(qq.statistics).toEqual(q.statistics);
    // Given centre and covariance replace the estimates in the statistics, not in the limits (as qcc).
    const given = mqcc(RYAN_SUBGROUPS, { center: q.center, covariance: q.covariance });
    given.statistics.forEach((t2, k) => expect(t2).toBeCloseTo(q.statistics[k], 10));
    expect(given.limits.ucl).toBe(q.limits.ucl);
  });
});

describe('individual observations (type "T2.single"), boiler, confidence 0.999 [QCC-MQCC]', () => {
  const q = mqcc(BOILER, { confidenceLevel: 0.999 });

  it('rows are individual observations: T2.single, 25 groups of 1', () => {
    expect(q.type).toBe('T2.single');
    expect([q.groups, q.size, q.variables]).toEqual([25, 1, 8]);
  });

  it('Center, Covariance matrix (row t1) and |S| = 8313.241', () => {
    ['525.00', '513.56', '538.92', '521.68', '503.80', '512.44', '478.72', '477.24'].forEach((p, j) =>
      expectPrinted(q.center[j], p),
    );
    // prettier-ignore
    const rowT1 = ['54.0000000', '0.9583333', '20.583333', '31.2916667', '20.3333333', '-2.2916667', '20.3750000', '0.2083333'];
    rowT1.forEach((p, j) => expectSignificant(q.covariance[0][j], p));
    expectPrinted(q.determinant, '8313.241');
  });

  it('Control limits 0 / 17.41705 (Tracy-Young-Mason Beta); Prediction limits 0 / 70.02943 (F): the limits of fitHotelling too', () => {
    expectPrinted(q.limits.ucl, '17.41705');
    expectPrinted(q.predictionLimits.ucl, '70.02943');
    const model = fitHotelling(BOILER, ['t1', 't2', 't3', 't4', 't5', 't6', 't7', 't8'], { alpha: 0.001 });
    expect(model.phaseOneLimit).toBeCloseTo(q.limits.ucl, 10);
    expect(model.limit).toBeCloseTo(q.predictionLimits.ucl, 10);
    // Same statistic as the autoscaled model (T² is affine invariant).
    model.phaseOne.t2.forEach((t2, i) => expect(t2).toBeCloseTo(q.statistics[i], 8));
  });
});

describe('T² with known parameters', () => {
  // [M111] x-bar1, x-bar2 and T² of samples 1-20 (18 without its T²).
  // prettier-ignore
  const table: [number, number, string | null][] = [
    [115.25, 1.04, '2.16'], [115.91, 1.06, '2.14'], [115.05, 1.09, '6.77'], [116.21, 1.05, '8.29'],
    [115.90, 1.07, '1.89'], [115.55, 1.06, '0.03'], [114.98, 1.05, '7.54'], [115.25, 1.10, '3.01'],
    [116.15, 1.09, '5.92'], [115.92, 1.05, '2.41'], [115.75, 0.99, '1.13'], [114.90, 1.06, '9.96'],
    [116.01, 1.05, '3.86'], [115.83, 1.07, '1.11'], [115.29, 1.11, '2.56'], [115.63, 1.04, '0.08'],
    [115.47, 1.03, '0.19'], [115.58, 1.05, null], [115.72, 1.06, '0.35'], [115.40, 1.04, '0.62'],
  ];

  it("Montgomery Example 11.1: T²_k = 10 (xbar_k - xbarbar)' S^-1 (xbar_k - xbarbar) with the stated estimates [M111]", () => {
    const chart = knownParameterT2(
      table.map(([x1, x2]) => [x1, x2]),
      {
        mean: [115.59, 1.06],
        covariance: [
          [1.23, 0.79],
          [0.79, 0.83],
        ],
        size: 10,
        alpha: 0.001,
      },
    );
    table.forEach(([, , printed], k) => {
      if (printed !== null) expectPrinted(chart.statistics[k], printed);
    });
  });

  it('the limit is chi2(1 - alpha; p): 13.816 (p = 2) and 26.124 (p = 8) at alpha = 0.001 [NIST-CHI2]', () => {
    expectPrinted(knownT2Limit(2, 0.001), '13.816');
    expectPrinted(knownT2Limit(8, 0.001), '26.124');
    const chart = knownParameterT2(
      [
        [0, 0],
        [4, 0],
      ],
      {
        mean: [0, 0],
        covariance: [
          [1, 0],
          [0, 1],
        ],
        alpha: 0.001,
      },
    );
    expectPrinted(chart.ucl, '13.816');
    expect(chart.statistics).toEqual([0, 16]);
    expect(chart.beyondLimits).toEqual([1]);
  });

  it('subgroupMeans turns raw subgroups into the rows knownParameterT2 scores', () => {
    const q = mqcc(RYAN_SUBGROUPS);
    const means = subgroupMeans(RYAN_SUBGROUPS);
    const known = knownParameterT2(means, { mean: q.center, covariance: q.covariance, size: 4 });
    known.statistics.forEach((t2, k) => expect(t2).toBeCloseTo(q.statistics[k], 10));
  });
});

describe('input errors', () => {
  it('unequal subgroup sizes, ragged rows and non-finite values are listed together', () => {
    const bad = [
      [
        [1, 2],
        [3, 4],
      ],
      [[1, NaN]],
    ];
    expect(() => mqcc(bad)).toThrow(MultivariateInputError);
    try {
      mqcc(bad);
    } catch (e) {
      expect((e as MultivariateInputError).issues).toEqual([
        'data: subgroup 1 has 1 observations, subgroup 0 has 2 (qcc needs equal sizes)',
        'data: subgroup 1 observation 0 variable 1 is not finite (NaN)',
      ]);
    }
  });

  it('a singular covariance, a bad confidence level and too few subgroups are refused', () => {
    const collinear = RYAN_SUBGROUPS.map((g) => g.map(([x1]) => [x1, 2 * x1]));
    expect(() => mqcc(collinear)).toThrow(NotPositiveDefiniteError);
    expect(() => mqcc(RYAN_SUBGROUPS, { confidenceLevel: 1 })).toThrow(ChartConfigError);
    expect(() => mqcc(BOILER.slice(0, 9))).toThrow(ChartConfigError); // T2.single needs m > p + 1
    expect(() =>
      knownParameterT2([[1, 2]], {
        mean: [0, 0],
        covariance: [
          [1, 0],
          [0, 1],
        ],
        size: 0,
      }),
    ).toThrow('size must be an integer >= 1, got 0');
  });
});
