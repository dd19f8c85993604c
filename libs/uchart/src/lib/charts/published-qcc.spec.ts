/**
 * qcc parity for univariate variables charts and capability: published values reproduced to the digits
 * the source prints (`expectPrinted`, see ../../testing/printed.ts). Every number asserted below was read from one
 * of these sources; the tag in each test names it.
 *
 * - [QCC-D] R package qcc (github.com/luca-scr/qcc), data/pistonrings.txt: Montgomery's piston-ring
 *   inside diameters (Introduction to SQC, Example 6.1 / Table 6.3), 40 samples of 5; samples 1-25 are
 *   the trial (Phase I) samples (transcribed in ../../testing/published-data.ts).
 * - [QCC-V] qcc vignette "A quick tour of qcc", docs/articles/qcc.html at the repository's HEAD
 *   (commit af35099): printed output of qcc() for "x-bar chart", "R chart", "S chart" and of
 *   processCapability() in "Process capability analysis".
 * - [QCC-V18] the same vignette as published on 2018-12-15 (docs/articles/qcc.html at commit 433e9e2):
 *   "Summary of group statistics" of Phase I and Phase II (newdata) subgroups, and process.capability()
 *   printed to 4 decimals.
 * - [QCC-V18b] the same vignette at commit e23c5fe (2018-12-20), "Variable control limits in control
 *   charts": qcc(diameter2[1:25,], type = "xbar" | "R") with 12 rings removed
 *   (out <- c(9, 10, 30, 35, 45, 64, 65, 74, 75, 85, 99, 100); sizes 3 x 4, 4 x 4, 5 x 17).
 * - [QCC-T] qcc's test suite, tests/testthat/test-capability.R (HEAD): expected capability indices and
 *   95% limits to 6 decimals for a 3 x 4 grouped data set.
 * - [MR] Montgomery & Runger, Applied Statistics and Probability for Engineers, Section 16-6,
 *   Example 16-2 and Table 16-3 (chemical process concentration, individuals and moving-range charts),
 *   pages 616-617; public page copies issuhub.com/view/index?id=5218&pageIndex=732 and pageIndex=733.
 * - [M63] / [M64] Montgomery, Introduction to SQC, Table 6.3 and Table 6.4 (piston rings with equal and
 *   with variable sample sizes, columns x-bar_i and s_i), as reproduced in the public exercise pages
 *   transtutors.com/questions/consider-the-piston-ring-data-shown-in-table-6-3-...-686305.htm and
 *   transtutors.com/questions/consider-the-data-in-table-6-4-...-686291.htm (rows 1-16 and 1-22 are
 *   legible there; only those rows are asserted).
 */
import { processCapability } from './capability';
import { evaluateSubgroups, subgroupLimits, subgroupPointLimits, subgroupStatistics } from './subgroup';
import { movingRangeLimits, movingRanges } from './moving-range';
import { individualsLimits, shewhartLimits } from './individuals';
import { expectPrinted } from '../../testing/printed';
import { CONCENTRATION, DIAMETER2, PISTONRINGS } from '../../testing/published-data';

/** R's summary(): min, type-7 quartiles, median, mean, max. */
function summary(values: readonly number[]): number[] {
  const s = [...values].sort((a, b) => a - b);
  const q = (p: number) => {
    const h = (s.length - 1) * p;
    const lo = Math.floor(h);
    return s[lo] + (h - lo) * (s[Math.min(lo + 1, s.length - 1)] - s[lo]);
  };
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return [s[0], q(0.25), q(0.5), mean, q(0.75), s[s.length - 1]];
}

function expectSummary(values: readonly number[], printed: readonly string[]): void {
  summary(values).forEach((v, i) => expectPrinted(v, printed[i]));
}

const PHASE1 = PISTONRINGS.slice(0, 25);
const PHASE2 = PISTONRINGS.slice(25);

describe('x-bar chart, piston rings', () => {
  it('qcc(diameter[1:25,], type = "xbar"): centre 74.00118, StdDev 0.009785039, limits 73.98805 / 74.0143 [QCC-V]', () => {
    const lim = subgroupLimits(PHASE1, 'xbar');
    expect(lim.sigmaMethod).toBe('UWAVE-R');
    expectPrinted(lim.center, '74.00118');
    expectPrinted(lim.sigma, '0.009785039');
    const pl = subgroupPointLimits(lim, 5);
    expectPrinted(pl.lcl, '73.98805');
    // R prints 7 significant digits and drops the trailing zero of 74.01430.
    expectPrinted(pl.ucl, '74.0143');
  });

  it('Phase I and Phase II (newdata = diameter[26:40,]) group statistics against the frozen limits [QCC-V18]', () => {
    const lim = subgroupLimits(PHASE1, 'xbar');
    expectSummary(
      evaluateSubgroups(lim, PHASE1).map((p) => p.statistic),
      ['73.99020', '73.99820', '74.00080', '74.00118', '74.00420', '74.01020'],
    );
    const phase2 = evaluateSubgroups(lim, PHASE2);
    expectSummary(
      phase2.map((p) => p.statistic),
      ['73.99220', '74.00290', '74.00720', '74.00765', '74.01270', '74.02340'],
    );
    // One set of limits for all 40 groups: Phase II does not move them.
    for (const p of phase2) {
      expectPrinted(p.lcl, '73.98805');
      expectPrinted(p.ucl, '74.0143');
    }
  });
});

describe('R chart, piston rings', () => {
  it('qcc(diameter[1:25,], type = "R"): centre 0.02276, StdDev 0.009785039, limits 0 / 0.04812533 [QCC-V]', () => {
    const lim = subgroupLimits(PHASE1, 'R');
    expectPrinted(lim.center, '0.02276');
    expectPrinted(lim.sigma, '0.009785039');
    const pl = subgroupPointLimits(lim, 5);
    expect(pl.lcl).toBe(0);
    expectPrinted(pl.ucl, '0.04812533');
  });

  it('group ranges of Phase I and of newdata = diameter[26:40,] [QCC-V18]', () => {
    const lim = subgroupLimits(PHASE1, 'R');
    expectSummary(
      evaluateSubgroups(lim, PHASE1).map((p) => p.statistic),
      ['0.00800', '0.01800', '0.02100', '0.02276', '0.02600', '0.03900'],
    );
    expectSummary(
      evaluateSubgroups(lim, PHASE2).map((p) => p.statistic),
      ['0.01400000', '0.01900000', '0.02500000', '0.02453333', '0.02750000', '0.04400000'],
    );
  });
});

describe('S chart, piston rings', () => {
  it('qcc(diameter[1:25,], type = "S"): centre 0.009240037, StdDev 0.009829977, limits 0 / 0.01930242 [QCC-V]', () => {
    const lim = subgroupLimits(PHASE1, 'S');
    expect(lim.sigmaMethod).toBe('UWAVE-SD');
    expectPrinted(lim.center, '0.009240037');
    expectPrinted(lim.sigma, '0.009829977');
    const pl = subgroupPointLimits(lim, 5);
    expect(pl.lcl).toBe(0);
    expectPrinted(pl.ucl, '0.01930242');
  });

  it('group standard deviations of Phase I and of newdata = diameter[26:40,] [QCC-V18]', () => {
    const lim = subgroupLimits(PHASE1, 'S');
    expectSummary(
      evaluateSubgroups(lim, PHASE1).map((p) => p.statistic),
      ['0.002863564', '0.007314369', '0.008467585', '0.009240037', '0.011928956', '0.016177144'],
    );
    expectSummary(
      evaluateSubgroups(lim, PHASE2).map((p) => p.statistic),
      ['0.005310367', '0.007367603', '0.010329569', '0.009761757', '0.011232319', '0.016546903'],
    );
  });

  it('Montgomery Table 6.3: x-bar_i and s_i of samples 1-16 [M63]', () => {
    // prettier-ignore
    const printed: [string, string][] = [
      ['74.010', '0.0148'], ['74.001', '0.0075'], ['74.008', '0.0147'], ['74.003', '0.0091'],
      ['74.003', '0.0122'], ['73.996', '0.0087'], ['74.000', '0.0055'], ['73.997', '0.0123'],
      ['74.004', '0.0055'], ['73.998', '0.0063'], ['73.994', '0.0029'], ['74.001', '0.0042'],
      ['73.998', '0.0105'], ['73.990', '0.0153'], ['74.006', '0.0073'], ['73.997', '0.0078'],
    ];
    printed.forEach(([mean, sd], i) => {
      const s = subgroupStatistics(PISTONRINGS[i]);
      expectPrinted(s.mean, mean);
      expectPrinted(s.sd, sd);
    });
  });
});

describe('variable subgroup sizes (UWAVE-R), piston rings without 12 rings', () => {
  it("Montgomery Table 6.4 is qcc's diameter2: x-bar_i and s_i of samples 1-22 [M64]", () => {
    // prettier-ignore
    const printed: [string, string][] = [
      ['74.010', '0.0148'], ['73.996', '0.0046'], ['74.008', '0.0147'], ['74.003', '0.0091'],
      ['74.003', '0.0122'], ['73.996', '0.0099'], ['73.999', '0.0055'], ['73.997', '0.0123'],
      ['74.004', '0.0064'], ['73.998', '0.0063'], ['73.994', '0.0029'], ['74.001', '0.0042'],
      ['73.994', '0.0100'], ['73.990', '0.0153'], ['74.008', '0.0087'], ['73.997', '0.0078'],
      ['73.999', '0.0115'], ['74.007', '0.0070'], ['73.998', '0.0085'], ['74.008', '0.0068'],
      ['74.000', '0.0122'], ['74.002', '0.0074'],
    ];
    printed.forEach(([mean, sd], i) => {
      if (i === 20) return; // sample 21: see below
      const s = subgroupStatistics(DIAMETER2[i]);
      expectPrinted(s.mean, mean);
      expectPrinted(s.sd, sd);
    });
    // Sample 21 is the one row where the book and qcc's data file differ: the table prints
    // 73.982 74.001 74.015 74.005 73.996, pistonrings.txt has 73.988 74.001 74.009 74.005 73.996 (same
    // sum, so the same mean). The book's own row reproduces its printed statistics.
    expect(PISTONRINGS[20]).toEqual([73.988, 74.001, 74.009, 74.005, 73.996]);
    const book21 = subgroupStatistics([73.982, 74.001, 74.015, 74.005, 73.996]);
    expectPrinted(book21.mean, printed[20][0]);
    expectPrinted(book21.sd, printed[20][1]);
    expectPrinted(subgroupStatistics(PISTONRINGS[20]).mean, printed[20][0]);
  });

  it('qcc(diameter2[1:25,], type = "xbar"): sizes 3/4/5 = 4/4/17, centre 74.00075, StdDev 0.009856701 [QCC-V18b]', () => {
    const phase1 = DIAMETER2.slice(0, 25);
    const sizes = phase1.map((g) => g.length);
    expect([3, 4, 5].map((n) => sizes.filter((s) => s === n).length)).toEqual([4, 4, 17]);
    const lim = subgroupLimits(phase1, 'xbar');
    expectPrinted(lim.center, '74.00075');
    expectPrinted(lim.sigma, '0.009856701');
    // Printed rows: group 1 (n = 5) and group 2 (n = 3); the last row is group 25 (n = 5).
    const l1 = subgroupPointLimits(lim, phase1[0].length);
    expectPrinted(l1.lcl, '73.98753');
    expectPrinted(l1.ucl, '74.01398');
    const l2 = subgroupPointLimits(lim, phase1[1].length);
    expect(phase1[1].length).toBe(3);
    expectPrinted(l2.lcl, '73.98368');
    expectPrinted(l2.ucl, '74.01782');
    // Summary of the group means [QCC-V18].
    expectSummary(
      evaluateSubgroups(lim, phase1).map((p) => p.statistic),
      ['73.99020', '73.99680', '73.99980', '74.00076', '74.00425', '74.01020'],
    );
  });

  it('qcc(diameter2[1:25,], type = "R"): centre 0.02230088 (size-weighted), limits 0 / 0.04785198 (n = 5), 0 / 0.04857007 (n = 3) [QCC-V18b]', () => {
    const phase1 = DIAMETER2.slice(0, 25);
    const lim = subgroupLimits(phase1, 'R');
    expectPrinted(lim.center, '0.02230088');
    expectPrinted(lim.sigma, '0.009856701');
    const l5 = subgroupPointLimits(lim, 5);
    const l3 = subgroupPointLimits(lim, 3);
    expect([l5.lcl, l3.lcl]).toEqual([0, 0]);
    expectPrinted(l5.ucl, '0.04785198');
    expectPrinted(l3.ucl, '0.04857007');
    // The unweighted mean range is printed in the group summary [QCC-V18].
    expectSummary(
      evaluateSubgroups(lim, phase1).map((p) => p.statistic),
      ['0.00800', '0.01600', '0.02100', '0.02168', '0.02600', '0.03900'],
    );
  });
});

describe('individuals and moving-range charts', () => {
  // [MR] Table 16-3: concentration, one observation per hour.
  const concentration = CONCENTRATION;

  it('Montgomery & Runger Example 16-2: moving ranges, x-bar 99.1, mr-bar 2.59, MR chart CL 2.59, LCL 0, D4 = 3.267 [MR]', () => {
    // prettier-ignore
    const printedMr = [
      '7.2', '3.5', '0.1', '3.6', '3.5', '0.5', '1.3', '2.3', '1.9',
      '3.2', '2.6', '2.4', '2.7', '1.4', '0.3', '3.6', '1.1', '4.2', '3.8',
    ];
    const mr = movingRanges(concentration);
    expect(mr).toHaveLength(19);
    printedMr.forEach((p, i) => expectPrinted(mr[i], p));
    const mrChart = movingRangeLimits(concentration);
    expectPrinted(mrChart.center, '2.59');
    expect(mrChart.lcl).toBe(0);
    // "D3 = 0 and D4 = 3.267 for n = 2": UCL = D4 mr-bar.
    expectPrinted(mrChart.ucl / mrChart.center, '3.267');
    expectPrinted(individualsLimits(concentration).center, '99.1');
  });

  it('Montgomery & Runger Example 16-2: individuals limits 92.21 / 105.99 from the rounded x-bar and mr-bar [MR]', () => {
    // The book computes 99.1 +/- 3 (2.59) / 1.128 from the rounded statistics it prints; from the
    // unrounded ones (99.095, 2.5895) the UCL is 105.98.
    const fromPrinted = shewhartLimits(99.1, 2.59 / 1.128);
    expectPrinted(fromPrinted.lcl, '92.21');
    expectPrinted(fromPrinted.ucl, '105.99');
    const lim = individualsLimits(concentration);
    expectPrinted(lim.lcl, '92.21');
    expectPrinted(lim.ucl, '105.98');
  });
});

describe('process capability, piston rings (sigma from the x-bar chart, 125 values)', () => {
  const values = PHASE1.flat();
  const sigmaWithin = subgroupLimits(PHASE1, 'xbar').sigma;
  const cap = (lsl: number, usl: number, target?: number) =>
    processCapability(values, { lsl, usl, ...(target !== undefined ? { target } : {}) }, { sigmaWithin });

  function expectIndex(idx: { value: number; lower: number; upper: number } | undefined, printed: string[]) {
    expect(idx).toBeDefined();
    expectPrinted(idx!.value, printed[0]);
    expectPrinted(idx!.lower, printed[1]);
    expectPrinted(idx!.upper, printed[2]);
  }

  it('spec 73.95 / 74.05, target = midpoint 74: Cp 1.703, Cp_l 1.743, Cp_u 1.663, Cp_k 1.663, Cpm 1.691 with 95% limits [QCC-V18]', () => {
    const c = cap(73.95, 74.05);
    expect(c.n).toBe(125);
    expectPrinted(c.target!, '74');
    expectIndex(c.cp, ['1.703', '1.491', '1.915']);
    expectIndex(c.cpl, ['1.743', '1.555', '1.932']);
    expectIndex(c.cpu, ['1.663', '1.483', '1.844']);
    expectIndex(c.cpk, ['1.663', '1.448', '1.878']);
    expectIndex(c.cpm, ['1.691', '1.480', '1.902']);
    // [QCC-V]: "Number of obs = 125", "Center = 74.00118", "StdDev = 0.009785039", Exp/Obs 0%.
    expectPrinted(c.center, '74.00118');
    expectPrinted(c.sigmaWithin, '0.009785039');
    expect(c.observedBelowLsl).toBe(0);
    expect(c.observedAboveUsl).toBe(0);
    expect(c.expectedBelowLsl! * 100).toBeLessThan(0.01); // qcc prints < 0.01% as 0%
    expect(c.expectedAboveUsl! * 100).toBeLessThan(0.01);
  });

  it('spec 73.95 / 74.05, target 74.02: Cp 1.7033 ... Cpm 0.7856 (0.6556, 0.9154) [QCC-V18]', () => {
    const c = cap(73.95, 74.05, 74.02);
    expectIndex(c.cp, ['1.7033', '1.4914', '1.9148']);
    expectIndex(c.cpl, ['1.7433', '1.5548', '1.9319']);
    expectIndex(c.cpu, ['1.6632', '1.4827', '1.8437']);
    expectIndex(c.cpk, ['1.6632', '1.4481', '1.8783']);
    expectIndex(c.cpm, ['0.7856', '0.6556', '0.9154']);
  });

  it('spec 73.99 / 74.01: Cp 0.3407, Cp_k 0.3006; expected 13% / 18% and observed 12% / 16% beyond [QCC-V18, QCC-V]', () => {
    const c = cap(73.99, 74.01);
    expectIndex(c.cp, ['0.3407', '0.2983', '0.3830']);
    expectIndex(c.cpl, ['0.3807', '0.3176', '0.4439']);
    expectIndex(c.cpu, ['0.3006', '0.2424', '0.3588']);
    expectIndex(c.cpk, ['0.3006', '0.2312', '0.3700']);
    expectIndex(c.cpm, ['0.3382', '0.2960', '0.3804']);
    // [QCC-V] prints signif(percent, 2): "Exp<LSL 13%  Obs<LSL 12%", "Exp>USL 18%  Obs>USL 16%".
    expectPrinted(c.expectedBelowLsl! * 100, '13');
    expectPrinted(c.observedBelowLsl! * 100, '12');
    expectPrinted(c.expectedAboveUsl! * 100, '18');
    expectPrinted(c.observedAboveUsl! * 100, '16');
  });

  it('spec 73.99 / 74.1 (off-centre), target = midpoint 74.045: Cp 1.8736, Cp_u 3.3665, Cp_k 0.3807, Cpm 0.4083 [QCC-V18, QCC-V]', () => {
    const c = cap(73.99, 74.1);
    expectPrinted(c.target!, '74.045');
    expectIndex(c.cp, ['1.8736', '1.6406', '2.1063']);
    expectIndex(c.cpl, ['0.3807', '0.3176', '0.4439']);
    expectIndex(c.cpu, ['3.3665', '3.0115', '3.7215']);
    expectIndex(c.cpk, ['0.3807', '0.3055', '0.4559']);
    expectIndex(c.cpm, ['0.4083', '0.3377', '0.4788']);
    expectPrinted(c.expectedBelowLsl! * 100, '13');
    expectPrinted(c.observedBelowLsl! * 100, '12');
    expect(c.observedAboveUsl).toBe(0);
  });
});

describe('process capability, qcc test data (3 groups of 4, spec 9.9 / 10.1) [QCC-T]', () => {
  // prettier-ignore
  const groups = [
    [10.00, 10.02, 9.98, 10.01],
    [10.03, 9.99, 10.01, 10.00],
    [9.97, 10.04, 10.02, 9.99],
  ];
  const sigmaWithin = subgroupLimits(groups, 'xbar').sigma;
  const values = groups.flat();
  type Row = [string, string, string];
  function expectRows(c: ReturnType<typeof processCapability>, rows: Record<string, Row | null>) {
    for (const [name, row] of Object.entries(rows)) {
      const idx = c[name as 'cp'];
      if (row === null) {
        expect(idx).toBeUndefined();
        continue;
      }
      expect(idx).toBeDefined();
      expectPrinted(idx!.value, row[0]);
      expectPrinted(idx!.lower, row[1]);
      expectPrinted(idx!.upper, row[2]);
    }
  }
  const cpFamily: Record<string, Row> = {
    cp: ['1.372667', '0.808460', '1.937713'],
    cpl: ['1.441300', '0.911657', '1.970943'],
    cpu: ['1.304033', '0.820114', '1.787953'],
    cpk: ['1.304033', '0.727408', '1.880659'],
    pp: ['1.612598', '0.949773', '2.276410'],
    ppl: ['1.693228', '1.078708', '2.307749'],
    ppu: ['1.531968', '0.971902', '2.092035'],
    ppk: ['1.531968', '0.864608', '2.199329'],
  };

  it('two-sided, on target (10.0): all ten indices and 95% limits', () => {
    const c = processCapability(values, { lsl: 9.9, usl: 10.1, target: 10 }, { sigmaWithin });
    expectRows(c, {
      ...cpFamily,
      cpm: ['1.344463', '0.804207', '1.885321'],
      ppm: ['1.567395', '0.933327', '2.202237'],
    });
  });

  it('two-sided, off target (10.02): Cpm 1.167834, Ppm 1.305161', () => {
    const c = processCapability(values, { lsl: 9.9, usl: 10.1, target: 10.02 }, { sigmaWithin });
    expectRows(c, {
      ...cpFamily,
      cpm: ['1.167834', '0.650542', '1.686689'],
      ppm: ['1.305161', '0.712493', '1.899988'],
    });
  });

  it('upper spec only: Cp_u = Cp_k (limits with z = qnorm(0.975) for Cp_k), no Cp / Cpm', () => {
    const c = processCapability(values, { usl: 10.1, target: 10.02 }, { sigmaWithin });
    expectRows(c, {
      cp: null,
      cpl: null,
      cpu: cpFamily.cpu,
      cpk: cpFamily.cpk,
      cpm: null,
      pp: null,
      ppl: null,
      ppu: cpFamily.ppu,
      ppk: cpFamily.ppk,
      ppm: null,
    });
  });

  it('lower spec only: Cp_k = Cp_l with Cp_k limits 0.810191 / 2.072409', () => {
    const c = processCapability(values, { lsl: 9.9, target: 10.02 }, { sigmaWithin });
    expectRows(c, {
      cp: null,
      cpl: cpFamily.cpl,
      cpu: null,
      cpk: ['1.441300', '0.810191', '2.072409'],
      cpm: null,
      pp: null,
      ppl: cpFamily.ppl,
      ppu: null,
      ppk: ['1.693228', '0.960982', '2.425474'],
      ppm: null,
    });
  });
});
