/**
 * One call per chart (`qcc`): the published values of published-qcc.spec.ts and
 * ../published-examples.spec.ts, now from the chart object, to the printed digits (`expectPrinted`,
 * ../../testing/printed.ts).
 *
 * Sources (every number asserted as printed was read from one of them):
 * - [QCC-V] R package qcc, vignette "A quick tour of qcc", docs/articles/qcc.html at commit af35099
 *   (github.com/luca-scr/qcc): printed output of qcc() for the x-bar, R and S charts of
 *   diameter[1:25, ] and of processCapability(); data data/pistonrings.txt.
 * - [QCC-V18b] the same vignette at commit e23c5fe (2018-12-20), "Variable control limits": x-bar and R
 *   charts of diameter2[1:25, ] (12 rings removed; sizes 3, 4 and 5).
 * - [QCC-V18] the same vignette at commit 433e9e2 (2018-12-15): process.capability() to 4 decimals.
 * - [QCC] the qcc vignette's printed xbar.one (viscosity), p / np (orangejuice), c (circuit) and u
 *   (pcmanufact) charts; data/circuit.txt and its help page (man/circuit.Rd): "Sample 6 and 20 are
 *   outside the control limits".
 * - [MR] Montgomery & Runger, Applied Statistics and Probability for Engineers, Example 16-2 / Table 16-3
 *   (concentration, moving-range chart: CL 2.59, LCL 0, UCL = D4 MR-bar with D4 = 3.267).
 */
import { ChartConfigError } from '../errors';
import { expectPrinted } from '../../testing/printed';
import {
  CIRCUIT,
  CONCENTRATION,
  DIAMETER2,
  ORANGEJUICE_D,
  PCMANUFACT,
  PISTONRINGS,
  VISCOSITY,
} from '../../testing/published-data';
import { qcc } from './qcc';

const DIAMETER = PISTONRINGS.slice(0, 25);
const NEW_DIAMETER = PISTONRINGS.slice(25);

describe('variables charts of the piston rings [QCC-V]', () => {
  it('x-bar: centre 74.00118, StdDev 0.009785039, limits 73.98805 / 74.0143 for all 40 groups', () => {
    const q = qcc(DIAMETER, { type: 'xbar', newdata: NEW_DIAMETER });
    expectPrinted(q.center!, '74.00118');
    expectPrinted(q.stdDev!, '0.009785039');
    expect(q.sigmaMethod).toBe('UWAVE-R');
    expect(q.statistics).toHaveLength(25);
    expect(q.newStatistics).toHaveLength(15);
    expect(q.points.map((p) => p.phase)).toEqual([...Array(25).fill('I'), ...Array(15).fill('II')]);
    for (const p of q.points) {
      expectPrinted(p.lcl, '73.98805');
      expectPrinted(p.ucl, '74.0143');
    }
    // Every point judged: those beyond a limit carry rule 1, and the counts agree with the points.
    const beyond = q.points.filter((p) => p.statistic > p.ucl || p.statistic < p.lcl).map((p) => p.index);
    expect(q.violations.beyondLimits).toEqual(beyond);
  });

  it('R: centre 0.02276, limits 0 / 0.04812533; S: centre 0.009240037, StdDev 0.009829977, limits 0 / 0.01930242', () => {
    const r = qcc(DIAMETER, { type: 'R' });
    expectPrinted(r.center!, '0.02276');
    expect(r.points[0].lcl).toBe(0);
    expectPrinted(r.points[0].ucl, '0.04812533');
    const s = qcc(DIAMETER, { type: 'S' });
    expectPrinted(s.center!, '0.009240037');
    expectPrinted(s.stdDev!, '0.009829977');
    expectPrinted(s.points[0].ucl, '0.01930242');
  });

  it('variable sizes: x-bar centre 74.00075, StdDev 0.009856701, limits by size; R centre 0.02230088 [QCC-V18b]', () => {
    const d2 = DIAMETER2.slice(0, 25);
    const x = qcc(d2, { type: 'xbar' });
    expectPrinted(x.center!, '74.00075');
    expectPrinted(x.stdDev!, '0.009856701');
    expect([x.points[0].size, x.points[1].size]).toEqual([5, 3]);
    expectPrinted(x.points[0].lcl, '73.98753');
    expectPrinted(x.points[0].ucl, '74.01398');
    expectPrinted(x.points[1].lcl, '73.98368');
    expectPrinted(x.points[1].ucl, '74.01782');
    const r = qcc(d2, { type: 'R' });
    expectPrinted(r.center!, '0.02230088');
    expectPrinted(r.points[0].ucl, '0.04785198');
    expectPrinted(r.points[1].ucl, '0.04857007');
  });

  it('capability with the chart: spec 73.95 / 74.05 gives Cp 1.703 (1.491, 1.915), Cp_k 1.663 (1.448, 1.878) [QCC-V18]', () => {
    const q = qcc(DIAMETER, { type: 'xbar', spec: { lsl: 73.95, usl: 74.05 } });
    const c = q.capability!;
    expect(c.n).toBe(125);
    expectPrinted(c.center, '74.00118');
    expectPrinted(c.sigmaWithin, '0.009785039');
    expectPrinted(c.cp!.value, '1.703');
    expectPrinted(c.cp!.lower, '1.491');
    expectPrinted(c.cp!.upper, '1.915');
    expectPrinted(c.cpk.value, '1.663');
    expectPrinted(c.cpk.lower, '1.448');
    expectPrinted(c.cpk.upper, '1.878');
    // No spec limits, no capability.
    expect(qcc(DIAMETER, { type: 'xbar' }).capability).toBeUndefined();
  });
});

describe('individuals and moving-range charts', () => {
  const viscosity = VISCOSITY;

  it('xbar.one: centre 33.52333, StdDev 0.4261651, limits 32.24484 / 34.80183; SD: 0.3415928, 32.49855 / 34.54811 [QCC]', () => {
    const q = qcc(viscosity, { type: 'xbar.one' });
    expect(q.sigmaMethod).toBe('MR');
    expectPrinted(q.center!, '33.52333');
    expectPrinted(q.stdDev!, '0.4261651');
    expectPrinted(q.points[0].lcl, '32.24484');
    expectPrinted(q.points[0].ucl, '34.80183');
    const sd = qcc(viscosity, { type: 'xbar.one', sigmaMethod: 'SD' });
    expectPrinted(sd.stdDev!, '0.3415928');
    expectPrinted(sd.points[0].lcl, '32.49855');
    expectPrinted(sd.points[0].ucl, '34.54811');
  });

  it('MR: CL 2.59, LCL 0, UCL / CL = D4 = 3.267 [MR]', () => {
    const concentration = CONCENTRATION;
    const q = qcc(concentration, { type: 'MR' });
    expect(q.statistics).toHaveLength(19);
    expectPrinted(q.center!, '2.59');
    expect(q.points[0].lcl).toBe(0);
    expectPrinted(q.points[0].ucl / q.center!, '3.267');
  });
});

describe('attribute charts [QCC]', () => {
  const ojD = ORANGEJUICE_D;
  const circuit = CIRCUIT;

  it('p: centre 0.2313333, limits 0.05242755 / 0.4102391; np: centre 11.56667, StdDev 2.981763, limits 2.621377 / 20.51196', () => {
    const p = qcc(ojD, { type: 'p', sizes: 50 });
    expectPrinted(p.center!, '0.2313333');
    expectPrinted(p.points[0].lcl, '0.05242755');
    expectPrinted(p.points[0].ucl, '0.4102391');
    const np = qcc(ojD, { type: 'np', sizes: 50 });
    expectPrinted(np.center!, '11.56667');
    expectPrinted(np.stdDev!, '2.981763');
    expectPrinted(np.points[0].lcl, '2.621377');
    expectPrinted(np.points[0].ucl, '20.51196');
  });

  it('c: centre 19.84615, StdDev 4.454902, limits 6.481447 / 33.21086; samples 6 and 20 outside the limits', () => {
    const c = qcc(circuit, { type: 'c' });
    expectPrinted(c.center!, '19.84615');
    expectPrinted(c.stdDev!, '4.454902');
    expectPrinted(c.points[0].lcl, '6.481447');
    expectPrinted(c.points[0].ucl, '33.21086');
    expect(c.violations.beyondLimits).toEqual([5, 19]);
  });

  it('u: pcmanufact (size 5), centre 1.93, limits 0.06613305 / 3.793867', () => {
    const u = qcc(PCMANUFACT, { type: 'u', sizes: 5 });
    expectPrinted(u.center!, '1.93');
    expectPrinted(u.points[0].lcl, '0.06613305');
    expectPrinted(u.points[0].ucl, '3.793867');
  });

  it('np with unequal sizes has no single centre; Phase II sizes default to a single Phase I size', () => {
    const np = qcc([3, 4, 5], { type: 'np', sizes: [20, 30, 40] });
    expect(np.center).toBeNull();
    expect(np.stdDev).toBeNull();
    // p-bar = 12 / 90; each centre is n p-bar.
    np.points.forEach((p, i) => expect(p.center).toBeCloseTo(([20, 30, 40][i] * 12) / 90, 14));
    const p = qcc(ojD, { type: 'p', sizes: 50, newdata: [40] });
    expect(p.points[30]).toMatchObject({ phase: 'II', size: 50, statistic: 0.8, violation: 1 });
  });
});

describe('known parameters and options', () => {
  it('a known stdDev keeps the Phase I centre (as qcc); a known centre replaces it', () => {
    const est = qcc(DIAMETER, { type: 'xbar' });
    const known = qcc(DIAMETER, { type: 'xbar', stdDev: 0.01 });
    expect(known.center).toBe(est.center);
    expect(known.sigmaMethod).toBe('known');
    expect(known.points[0].ucl - known.center!).toBeCloseTo((3 * 0.01) / Math.sqrt(5), 14);
    const both = qcc(DIAMETER, { type: 'xbar', stdDev: 0.01, center: 74 });
    expect(both.points[0].center).toBe(74);
  });

  it('refuses what qcc would compute differently or not at all', () => {
    expect(() => qcc(DIAMETER, { type: 'R', confidenceLevel: 0.99 })).toThrow(ChartConfigError);
    expect(() => qcc([1, 2, 3], { type: 'p' })).toThrow('sample sizes must be given for a p chart (as qcc)');
    expect(() => qcc(DIAMETER, { type: 'R', spec: { lsl: 73.9, usl: 74.1 } })).toThrow(ChartConfigError);
    expect(() => qcc([1, 2, 3], { type: 'xbar' })).toThrow(ChartConfigError);
    expect(() => qcc(DIAMETER, { type: 'xbar.one' })).toThrow(ChartConfigError);
    expect(() => qcc(DIAMETER, { type: 'xbar', nSigma: 3, confidenceLevel: 0.99 })).toThrow(ChartConfigError);
  });
});
