/**
 * Published control-chart examples, reproduced to the digits the source prints.
 *
 * "To the printed digits" means: |computed - printed| <= half a unit in the last printed place
 * (`expectPrinted`, ../testing/printed.ts), i.e. the computed value rounds to the printed one (a value exactly half-way may
 * be printed either way). Where a source visibly truncates instead of rounding, the test says so and
 * truncates (`expectTruncated`).
 *
 * Sources (every number below was read from one of them):
 * - [NIST] NIST/SEMATECH e-Handbook of Statistical Methods, section 6.3.2 (https://www.itl.nist.gov/div898/handbook/pmc/section3/):
 *   6.3.2.2 individuals chart (pmc322.htm), 6.3.2.3 CUSUM (pmc323.htm), 6.3.2.4 EWMA (pmc324.htm).
 *   The pages were read through public transcriptions of their tables (test fixtures of open-source SPC
 *   packages quoting pmc322/pmc323/pmc324 verbatim); the stored copies agree with each other and with
 *   the recursions.
 * - [QCC] R package qcc, vignette "A quick tour of qcc" (Scrucca; docs/articles/qcc_a_quick_tour.html in
 *   github.com/luca-scr/qcc), printed output of qcc() / ewma(); datasets data/orangejuice.txt,
 *   data/circuit.txt, data/pcmanufact.txt (Montgomery, Introduction to Statistical Quality Control).
 * - [QCC-T] qcc's test suite, tests/testthat/test-cusum.R (github.com/luca-scr/qcc).
 * - [SAS] SAS/QC User's Guide, SHEWHART procedure, UCHART statement, "Saving Control Limits"
 *   (data set Fabric, Figure 17.87 "The Data Set Fablim"), support.sas.com/documentation/cdl/en/qcug/66114/HTML/default/qcug_shewhart_sect341.htm.
 * - [MR] Montgomery & Runger, Applied Statistics and Probability for Engineers, Example 16-6 / Table 16-8
 *   "The Tabular CUSUM for the Chemical Process Concentration Data" (a public page copy:
 *   issuhub.com/view/index?id=5218&pageIndex=752).
 */
import { attributeLimits, attributeRate } from './charts/attribute';
import { cusumSeries } from './charts/cusum';
import { ewmaSeries } from './charts/ewma';
import { estimateSigma, individualsLimits } from './charts/individuals';
import { establishBaseline, pointLimits, type BaselineSample } from './baseline';
import { expectPrinted, expectTruncated } from '../testing/printed';
import { CIRCUIT, CONCENTRATION, ORANGEJUICE_D, PCMANUFACT, VISCOSITY } from '../testing/published-data';

describe('individuals chart', () => {
  it('NIST 6.3.2.2: flow-rate example, MR-bar and 3-sigma limits with d2 = 1.128 [NIST pmc322]', () => {
    const flowRate = [49.6, 47.6, 49.9, 51.3, 47.8, 51.2, 52.6, 52.4, 53.6, 52.1];
    const lim = individualsLimits(flowRate);
    expectPrinted(lim.center, '50.81');
    expectPrinted(lim.mrBar ?? NaN, '1.8778');
    expectPrinted(lim.ucl, '55.8041');
    expectPrinted(lim.lcl, '45.8159');
  });

  // qcc vignette, "Continuous one-at-time data": viscosity data (Montgomery, p. 242).
  const viscosity = VISCOSITY;

  it('qcc xbar.one, moving-range sigma: centre 33.52333, sd 0.4261651, limits 32.24484 / 34.80183 [QCC]', () => {
    const lim = individualsLimits(viscosity, { sigmaMethod: 'moving-range' });
    expectPrinted(lim.center, '33.52333');
    expectPrinted(lim.sigma, '0.4261651');
    expectPrinted(lim.lcl, '32.24484');
    expectPrinted(lim.ucl, '34.80183');
  });

  it('qcc xbar.one, std.dev = "SD" (sd / c4): sd 0.3415928, limits 32.49855 / 34.54811 [QCC]', () => {
    const lim = individualsLimits(viscosity, { sigmaMethod: 'sample-sd-unbiased' });
    expectPrinted(lim.sigma, '0.3415928');
    expectPrinted(lim.lcl, '32.49855');
    expectPrinted(lim.ucl, '34.54811');
    // The plain sample sd is smaller by exactly c4(15).
    expect(estimateSigma(viscosity, 'sample-sd').sigma).toBeLessThan(lim.sigma);
  });
});

describe('EWMA chart', () => {
  it('NIST 6.3.2.4: lambda 0.3, target 50, s 2.0539; EWMA series and limits [NIST pmc324]', () => {
    const data = [
      52.0, 47.0, 53.0, 49.3, 50.1, 47.0, 51.0, 50.1, 51.2, 50.5, 49.6, 47.6, 49.9, 51.3, 47.8, 51.2, 52.6,
      52.4, 53.6, 52.1,
    ];
    // prettier-ignore
    const printedEwma = [
      '50.60', '49.52', '50.56', '50.18', '50.16', '49.21', '49.75', '49.85', '50.26', '50.33',
      '50.11', '49.36', '49.52', '50.05', '49.38', '49.92', '50.73', '51.23', '51.94', '51.99',
    ];
    const s = ewmaSeries(data, { lambda: 0.3, L: 3, center: 50, sigma: 2.0539 });
    printedEwma.forEach((p, i) => expectPrinted(s.z[i], p));
    // NIST prints the steady-state limits truncated to 4 decimals (52.58843 -> 52.5884, 47.41157 ->
    // 47.4115); by point 20 the exact limits equal the steady state to 1e-6.
    expectTruncated(s.ucl[19], '52.5884');
    expectTruncated(s.lcl[19], '47.4115');
    // "none of the EWMA values is outside the limits"
    expect(s.signals).toEqual([]);
  });

  it('qcc ewma(x, lambda = 0.2, nsigmas = 2.7) on the viscosity data: exact limits at points 1, 2, 15 [QCC]', () => {
    const x = VISCOSITY;
    const est = estimateSigma(x, 'moving-range');
    expectPrinted(est.center, '33.52333');
    expectPrinted(est.sigma, '0.4261651');
    const s = ewmaSeries(x, { lambda: 0.2, L: 2.7, center: est.center, sigma: est.sigma });
    expectPrinted(s.lcl[0], '33.29320');
    expectPrinted(s.ucl[0], '33.75346');
    expectPrinted(s.lcl[1], '33.22862');
    expectPrinted(s.ucl[1], '33.81804');
    expectPrinted(s.lcl[14], '33.14002');
    expectPrinted(s.ucl[14], '33.90664');
  });
});

describe('CUSUM chart', () => {
  it('NIST 6.3.2.3: tabular CUSUM, target 325, k = 0.3175, h = 4.1959 (sigma of means 0.635) [NIST pmc323]', () => {
    const data = [
      324.925, 324.675, 324.725, 324.35, 325.35, 325.225, 324.125, 324.525, 325.225, 324.6, 324.625, 325.15,
      328.325, 327.25, 327.825, 328.5, 326.675, 327.775, 326.875, 328.35,
    ];
    // NIST columns S_hi and S_lo, in data units, printed to 2 decimals.
    // prettier-ignore
    const sHi = [
      '0.00', '0.00', '0.00', '0.00', '0.03', '0.00', '0.00', '0.00', '0.00', '0.00',
      '0.00', '0.00', '3.01', '4.94', '7.45', '10.63', '11.99', '14.44', '16.00', '19.04',
    ];
    // prettier-ignore
    const sLo = [
      '0.00', '0.01', '0.00', '0.33', '0.00', '0.00', '0.56', '0.72', '0.17', '0.25',
      '0.31', '0.00', '0.00', '0.00', '0.00', '0.00', '0.00', '0.00', '0.00', '0.00',
    ];
    const sigma = 0.635;
    // Standardised: k = 0.3175 / 0.635 = 0.5, h = 4.1959 / 0.635.
    const c = cusumSeries(data, { target: 325, sigma, k: 0.5, h: 4.1959 / sigma });
    sHi.forEach((p, i) => expectPrinted(c.upper[i] * sigma, p));
    sLo.forEach((p, i) => expectPrinted(c.lower[i] * sigma, p));
    // NIST flags groups 14 to 20 as out of control (S_hi > h), nothing on the low side.
    expect(c.signalsUpper).toEqual([13, 14, 15, 16, 17, 18, 19]);
    expect(c.signalsLower).toEqual([]);
  });

  it('Montgomery & Runger Example 16-6: mu0 = 99, K = 1, H = 10, chemical concentration [MR]', () => {
    const x = CONCENTRATION;
    // prettier-ignore
    const sH = [
      '2.0', '0.0', '0.0', '0.0', '2.0', '0.5', '0.0', '0.0', '0.0', '0.0',
      '1.3', '0.0', '1.1', '0.0', '0.0', '0.0', '0.3', '1.7', '0.0', '1.0',
    ];
    // prettier-ignore
    const sL = [
      '0.0', '3.2', '2.9', '2.5', '0.0', '0.0', '0.0', '0.3', '0.0', '0.0',
      '0.0', '0.0', '0.0', '0.0', '1.0', '2.3', '0.0', '0.0', '0.8', '0.0',
    ];
    // K and H are given in data units with sigma = 1, so they are already standardised.
    const c = cusumSeries(x, { target: 99, sigma: 1, k: 1, h: 10 });
    sH.forEach((p, i) => expectPrinted(c.upper[i], p));
    sL.forEach((p, i) => expectPrinted(c.lower[i], p));
    // "the CUSUMs in this example never exceed the decision interval H = 10"
    expect([...c.signalsUpper, ...c.signalsLower]).toEqual([]);
  });

  it('qcc: strict decision boundary, sums and violations (h = 1, k = 0.5, head start 0) [QCC-T]', () => {
    const c = cusumSeries([1.5, 0.5, 0.6, -1.5, -0.5, -0.8], {
      target: 0,
      sigma: 1,
      k: 0.5,
      h: 1,
      headStart: 0,
    });
    const pos = [1.0, 1.0, 1.1, 0.0, 0.0, 0.0];
    const neg = [0.0, 0.0, 0.0, 1.0, 1.0, 1.3]; // qcc stores the lower sum negated
    pos.forEach((v, i) => expect(c.upper[i]).toBeCloseTo(v, 12));
    neg.forEach((v, i) => expect(c.lower[i]).toBeCloseTo(v, 12));
    // A sum equal to h (points 1, 2, 4, 5) is not a signal.
    expect(c.signalsUpper).toEqual([2]);
    expect(c.signalsLower).toEqual([5]);
  });
});

describe('attribute charts', () => {
  // qcc data/orangejuice.txt, trial samples 1-30 (D nonconforming of 50 cans).
  const ojD = ORANGEJUICE_D;
  const oj: BaselineSample[] = ojD.map((d, i) => ({ runId: `oj-${i + 1}`, value: d, size: 50 }));

  it('p chart, orange juice trial samples: centre 0.2313333, limits 0.05242755 / 0.4102391 [QCC]', () => {
    const pbar = attributeRate(
      'p',
      oj.map((s) => ({ count: s.value, size: s.size })),
    );
    expectPrinted(pbar, '0.2313333');
    const lim = attributeLimits('p', pbar, 50);
    expectPrinted(lim.lcl, '0.05242755');
    expectPrinted(lim.ucl, '0.4102391');
  });

  it('np chart, orange juice: centre 11.56667, sd 2.981763, limits 2.621377 / 20.51196 [QCC]', () => {
    const pbar = attributeRate(
      'np',
      oj.map((s) => ({ count: s.value, size: s.size })),
    );
    const lim = attributeLimits('np', pbar, 50);
    expectPrinted(lim.center, '11.56667');
    expectPrinted(lim.sigma, '2.981763');
    expectPrinted(lim.lcl, '2.621377');
    expectPrinted(lim.ucl, '20.51196');
  });

  it('p chart Phase I with one exclusion pass drops samples 15 and 23: centre 0.215, limits 0.04070284 / 0.3892972 [QCC]', () => {
    // qcc removes 15 and 23 (assignable causes, help(orangejuice)); they are exactly the trial samples
    // above the first UCL, so one exclusion pass reproduces the revised chart.
    const lim = establishBaseline(
      oj,
      { type: 'p', nSigma: 3 },
      { minRuns: 20, exclusion: { maxPasses: 1 }, frozenAt: '2024-01-01T00:00:00Z' },
    );
    expect(lim.excludedRunIds).toEqual(['oj-15', 'oj-23']);
    expectPrinted(lim.center, '0.215');
    const pl = pointLimits(lim, 50);
    expectPrinted(pl.lcl, '0.04070284');
    expectPrinted(pl.ucl, '0.3892972');
  });

  it('p chart with variable sample sizes (25 / 50 / 100): limits per size [QCC]', () => {
    // qcc vignette "Standardized p chart": 15 groups, sizes 5 x 50, 5 x 100, 5 x 25; printed centre
    // 0.2148571 = 188 / 875 (sum of sizes 875), limits for n = 50 and n = 25.
    const pbar = 188 / 875;
    expectPrinted(pbar, '0.2148571');
    const l50 = attributeLimits('p', pbar, 50);
    expectPrinted(l50.lcl, '0.04060204');
    expectPrinted(l50.ucl, '0.3891122');
    const l25 = attributeLimits('p', pbar, 25);
    expectPrinted(l25.lcl, '0.00000000');
    expectPrinted(l25.ucl, '0.4612911');
  });

  // qcc data/circuit.txt: nonconformities in 100 printed circuit boards, trial samples 1-26.
  const circuit = CIRCUIT;
  const circuitSamples: BaselineSample[] = circuit.map((x, i) => ({
    runId: `c-${i + 1}`,
    value: x,
    size: 100,
  }));

  it('c chart, circuit trial samples: centre 19.84615, sd 4.454902, limits 6.481447 / 33.21086 [QCC]', () => {
    const lim = establishBaseline(
      circuitSamples,
      { type: 'c', nSigma: 3 },
      { minRuns: 20, exclusion: false, frozenAt: '2024-01-01T00:00:00Z' },
    );
    const pl = pointLimits(lim);
    expectPrinted(lim.center, '19.84615');
    expectPrinted(pl.sigma, '4.454902');
    expectPrinted(pl.lcl, '6.481447');
    expectPrinted(pl.ucl, '33.21086');
  });

  it('c chart, iterative exclusion converges on removing samples 6 and 20: 19.66667, 6.362532 / 32.9708 [QCC]', () => {
    const lim = establishBaseline(
      circuitSamples,
      { type: 'c', nSigma: 3 },
      { minRuns: 20, frozenAt: '2024-01-01T00:00:00Z' },
    );
    expect(lim.excludedRunIds).toEqual(['c-6', 'c-20']);
    expect(lim.exclusionPasses).toBe(1);
    const pl = pointLimits(lim);
    expectPrinted(lim.center, '19.66667');
    expectPrinted(pl.sigma, '4.434712');
    expectPrinted(pl.lcl, '6.362532');
    expectPrinted(pl.ucl, '32.9708');
  });

  it('u chart, circuit without 6 and 20 per board (size 100): 0.1966667, 0.06362532 / 0.329708 [QCC]', () => {
    const kept = circuitSamples.filter((s) => s.runId !== 'c-6' && s.runId !== 'c-20');
    const lim = establishBaseline(
      kept,
      { type: 'u', nSigma: 3 },
      { minRuns: 20, exclusion: false, frozenAt: '2024-01-01T00:00:00Z' },
    );
    const pl = pointLimits(lim, 100);
    expectPrinted(lim.center, '0.1966667');
    expectPrinted(pl.lcl, '0.06362532');
    expectPrinted(pl.ucl, '0.329708');
  });

  it('u chart, pcmanufact (size 5): centre 1.93, limits 0.06613305 / 3.793867 [QCC]', () => {
    const x = PCMANUFACT;
    const ubar = attributeRate(
      'u',
      x.map((count) => ({ count, size: 5 })),
    );
    expectPrinted(ubar, '1.93');
    const lim = attributeLimits('u', ubar, 5);
    expectPrinted(lim.lcl, '0.06613305');
    expectPrinted(lim.ucl, '3.793867');
  });

  it('u chart, SAS Fabric data (30 m2 rolls): _U_ 0.30333, _LCLU_ .001671271, _UCLU_ 0.60500 [SAS]', () => {
    const defects = [12, 11, 9, 15, 7, 6, 5, 10, 8, 8, 14, 5, 9, 13, 7, 5, 8, 11, 7, 12];
    const ubar = attributeRate(
      'u',
      defects.map((count) => ({ count, size: 30 })),
    );
    expectPrinted(ubar, '0.30333');
    const lim = attributeLimits('u', ubar, 30);
    expectPrinted(lim.lcl, '.001671271');
    expectPrinted(lim.ucl, '0.60500');
  });
});
