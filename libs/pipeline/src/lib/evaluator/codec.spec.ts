import { validateLimitSet, type LimitSetRecord, type UChartPoint } from '@defender/contracts';
import { NAMED_RULES, type ChartPoint } from '@defender/defense-rules';
import { establishBaseline, knownLimits, type ChartSpec, type FrozenLimits } from '@defender/uchart';
import { decodeHistory, decodeLimits, decodePoint, decodeRun, encodeLimits, encodePoint } from './codec';
import { describeFlags, POINT_FLAGS, ruleFlag } from './flags';
import { CHAMBER } from './testing/harness';

const AT = new Date('2024-05-01T00:00:00.000Z');

/** The store's round trip: JSON text and back (Dates revived). */
function viaJson<T>(value: T, dateField?: string): T {
  return JSON.parse(JSON.stringify(value), (k, v) => (k === dateField && typeof v === 'string' ? new Date(v) : v)) as T;
}

describe('U-chart points', () => {
  const cases: [string, ChartPoint, Partial<UChartPoint>][] = [
    ['Phase I point (no limits yet)', { value: 12.5, statistic: 12.5, limitsVersion: null }, {}],
    ['individuals point', { value: -3.25e-7, statistic: -3.25e-7, limitsVersion: 2 }, { limitsVersion: 2 }],
    [
      'p chart point: count, size and the proportion',
      { value: 3, statistic: 3 / 7, exposure: 7, limitsVersion: 1 },
      { size: 7, chart: { statistic: 3 / 7 } },
    ],
    [
      'EWMA point',
      { value: 51.2, statistic: 51.2, limitsVersion: 1, ewma: 50.12345678901234, ewmaIndex: 17 },
      { chart: { ewma: 50.12345678901234, ewmaIndex: 17 } },
    ],
    [
      'CUSUM point that signalled',
      {
        value: 328.325,
        statistic: 328.325,
        limitsVersion: 4,
        cusum: { upper: 7.123, lower: 0, upperRun: 3, lowerRun: 0, signal: true },
      },
      { chart: { cusumUpper: 7.123, cusumLower: 0, cusumUpperRun: 3, cusumLowerRun: 0, cusumSignal: 1 } },
    ],
    [
      'CUSUM point without a signal',
      {
        value: 1,
        statistic: 1,
        limitsVersion: 1,
        cusum: { upper: 0, lower: 0.5, upperRun: 0, lowerRun: 1, signal: false },
      },
      { chart: { cusumUpper: 0, cusumLower: 0.5, cusumUpperRun: 0, cusumLowerRun: 1, cusumSignal: 0 } },
    ],
  ];

  it.each(cases)('%s: encodes as documented and decodes to the same chart point', (_name, point, stored) => {
    const encoded = encodePoint('R|k', point, POINT_FLAGS.RUN_ALARMED);
    expect(encoded).toMatchObject({ indicatorKey: 'R|k', value: point.value, flags: 1, ...stored });
    if (!stored.chart) expect(encoded.chart).toBeUndefined();
    expect(Object.keys(encoded.chart ?? {}).length).toBeLessThanOrEqual(16);
    expect(decodePoint(viaJson(encoded))).toEqual(point);
  });

  it('a run decodes with its points and the alarmed bit; a dead-lettered run (no points) is no run', () => {
    const set = {
      ...CHAMBER,
      sequence: 3,
      runId: 'r3',
      epoch: 1,
      committedAt: AT,
      points: [
        encodePoint('A|x', { value: 1, statistic: 1, limitsVersion: 1 }, POINT_FLAGS.RUN_ALARMED),
        encodePoint('B|x', { value: 2, statistic: 2, limitsVersion: null }, POINT_FLAGS.RUN_ALARMED | POINT_FLAGS.VIOLATION),
      ],
    };
    expect(decodeRun(set)).toEqual({
      runId: 'r3',
      alarmed: true,
      points: { 'A|x': { value: 1, statistic: 1, limitsVersion: 1 }, 'B|x': { value: 2, statistic: 2, limitsVersion: null } },
    });
    // Only the keys asked for, but the run still counts (and alarmed) for escalation.
    expect(decodeRun(set, new Set(['C|x']))).toEqual({ runId: 'r3', alarmed: true, points: {} });
    const quiet = { ...set, runId: 'r4', points: [encodePoint('A|x', { value: 1, statistic: 1, limitsVersion: 1 }, 0)] };
    const dead = { ...set, runId: 'dead-letter:5:r5', points: [] };
    expect(decodeHistory([set, dead, quiet]).map((r) => [r.runId, r.alarmed])).toEqual([
      ['r3', true],
      ['r4', false],
    ]);
  });
});

describe('limit sets', () => {
  const values = [10.1, 9.7, 10.4, 10.0, 9.9, 10.3, 9.6, 10.2, 10.0, 9.8, 16, 10.1];
  const samples = values.map((value, i) => ({ runId: `r${i + 1}`, value }));
  const counts = [3, 5, 2, 4, 6, 3, 2, 5, 4, 3].map((value, i) => ({ runId: `r${i + 1}`, value, size: 50 + 5 * i }));
  const baseline = (chart: ChartSpec, s = samples) => establishBaseline(s, chart, { minRuns: 5, frozenAt: AT.toISOString() });

  const cases: [string, FrozenLimits][] = [
    ['individuals, moving-range sigma, one run excluded', baseline({ type: 'individuals', sigmaMethod: 'moving-range', nSigma: 3 })],
    ['individuals, unbiased sd, 2.5 sigma', baseline({ type: 'individuals', sigmaMethod: 'sample-sd-unbiased', nSigma: 2.5 })],
    ['EWMA', baseline({ type: 'ewma', lambda: 0.2, L: 2.7, sigmaMethod: 'moving-range' })],
    [
      'CUSUM with head start and reset',
      baseline({ type: 'cusum', k: 0.5, h: 4, headStart: 2, resetOnSignal: true, sigmaMethod: 'sample-sd' }),
    ],
    ['p chart', baseline({ type: 'p', nSigma: 3 }, counts)],
    ['u chart', baseline({ type: 'u', nSigma: 3 }, counts)],
    ['c chart', baseline({ type: 'c', nSigma: 3 }, counts)],
    [
      'known parameters, version 3',
      knownLimits({ type: 'np', nSigma: 3 }, 0.05, NaN, { frozenAt: AT.toISOString(), version: 3 }),
    ],
  ];

  it.each(cases)('%s: round-trips through a stored limit set', (_name, limits) => {
    const rec = encodeLimits(CHAMBER, 'R|k', limits, AT);
    expect(() => validateLimitSet(rec)).not.toThrow();
    expect(decodeLimits(viaJson(rec, 'createdAt'))).toEqual({ ok: true, limits });
  });

  it('stores the limits an operator reads: Shewhart, asymptotic EWMA, none for CUSUM and attribute charts', () => {
    const [ind, , ewma, cusum, p] = cases.map(([, l]) => encodeLimits(CHAMBER, 'R|k', l, AT));
    const l = cases[0][1];
    expect(l.excludedRunIds).toEqual(['r11']);
    expect(ind).toMatchObject({ chartType: 'individuals', lcl: l.center - 3 * l.sigma, ucl: l.center + 3 * l.sigma });
    expect(ind.params).toEqual({ sigmaMethod: 'moving-range', nSigma: 3, mrBar: l.mrBar, exclusionPasses: 1 });
    expect(ind.baseline).toEqual({ reason: 'initial', runIds: l.baselineRunIds, excludedRunIds: ['r11'] });
    const e = cases[2][1];
    expect(ewma.ucl).toBeCloseTo(e.center + 2.7 * e.sigma * Math.sqrt(0.2 / 1.8), 12);
    expect([cusum.lcl, cusum.ucl, cusum.params['h']]).toEqual([null, null, 4]);
    expect([p.sigma, p.lcl, p.ucl]).toEqual([null, null, null]);
  });

  const good = encodeLimits(CHAMBER, 'R|k', cases[0][1], AT);
  const broken: [string, Partial<LimitSetRecord>, string][] = [
    ['an unknown chart type', { chartType: 'xbar-r' }, 'chart type "xbar-r" is unknown'],
    ['a missing parameter', { params: { sigmaMethod: 'moving-range' } }, 'params.nSigma must be a finite number'],
    ['an unknown sigma method', { params: { ...good.params, sigmaMethod: 'iqr' } }, 'params.sigmaMethod "iqr" is unknown'],
    ['no sigma on a variables chart', { sigma: null }, 'sigma null must be > 0'],
    [
      'EWMA lambda out of range',
      { chartType: 'ewma', params: { lambda: 0, L: 3, sigmaMethod: 'moving-range' } },
      'EWMA lambda must be in (0, 1], got 0',
    ],
    [
      'a CUSUM head start beyond h',
      { chartType: 'cusum', params: { k: 0.5, h: 4, headStart: 5, resetOnSignal: false, sigmaMethod: 'sample-sd' } },
      'CUSUM headStart must be in [0, h), got 5',
    ],
    ['an invalid date', { createdAt: new Date(NaN) }, 'createdAt is not a valid date'],
  ];

  it.each(broken)('reports %s instead of throwing', (_name, patch, detail) => {
    expect(decodeLimits({ ...good, ...patch })).toEqual({ ok: false, detail: expect.stringContaining(detail) });
  });

  it('reads a baseline reason it does not know as manual', () => {
    const r = decodeLimits({ ...good, baseline: { ...good.baseline, reason: 'chamber-wet-clean' } });
    expect(r.ok && r.limits.reason).toBe('manual');
  });
});

describe('flags', () => {
  it('are distinct single bits of an unsigned 32-bit integer', () => {
    const bits = Object.values(POINT_FLAGS);
    expect(new Set(bits).size).toBe(bits.length);
    for (const b of bits) {
      expect(b > 0 && b < 2 ** 31).toBe(true);
      expect(b & (b - 1)).toBe(0);
    }
  });

  it('name every rule defense-rules can report', () => {
    const ids = [...Object.keys(NAMED_RULES), 'EWMA', 'CUSUM_UPPER', 'CUSUM_LOWER', 'SPEC_USL', 'SPEC_LSL'];
    for (const id of ids) expect(describeFlags(ruleFlag(id))).toEqual([id]);
    expect(ruleFlag('N9')).toBe(POINT_FLAGS.OTHER_RULE);
    expect(describeFlags(POINT_FLAGS.RUN_ALARMED | POINT_FLAGS.WE2 | POINT_FLAGS.VIOLATION)).toEqual([
      'RUN_ALARMED',
      'VIOLATION',
      'WE2',
    ]);
  });
});
