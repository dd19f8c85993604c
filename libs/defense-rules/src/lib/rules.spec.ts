import {
  checkRule,
  flagSeries,
  NELSON_RULES,
  WESTERN_ELECTRIC_RULES,
  type RunRule,
  type ZonedPoint,
} from './rules';

/** Points on a chart with centre 0, sigma 1, 3-sigma limits. */
const std = (values: number[]): ZonedPoint[] =>
  values.map((value) => ({ value, center: 0, sigma: 1, lcl: -3, ucl: 3 }));
/** 1-based indices of flagged points (the convention of the published tables). */
const flagged = (rule: RunRule, values: number[]) =>
  flagSeries(rule, std(values)).flatMap((f, i) => (f ? [i + 1] : []));

const { N1, N2, N3, N4, N5, N6, N7, N8 } = NELSON_RULES;
const { WE1, WE2, WE3, WE4 } = WESTERN_ELECTRIC_RULES;

describe('published rule examples (R qcc, tests/testthat/test-rules.R, github.com/luca-scr/qcc)', () => {
  // Each case: the data and the violating indices qcc's test suite expects (centre 0, sd 1, 3 sigma).
  const cases: [string, RunRule, number[], number[]][] = [
    ['WER1', WE1, [0, 3.2, -3.5, 2.9], [2, 3]],
    ['WER2', WE2, [0, 2.5, 1.0, 2.6, 0], [4]],
    ['WER3', WE3, [0, 1.2, 1.3, 0.2, 1.4, 1.5], [6]],
    ['WER4', WE4, [-1, -1, -1, -1, -1, -1, -1, -1, 1], [8]],
    ['WER4 (precedence data)', WE4, [2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 3.2], [8]],
    ['WER3 (precedence data)', WE3, [2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 3.2], [5, 6, 7, 8]],
    ['WER2 (precedence data)', WE2, [2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 3.2], [3, 4, 5, 6, 7, 8]],
    ['WER1 (precedence data)', WE1, [2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 3.2], [8]],
    ['NEL1', N1, [0, 3.2, -3.4, 3], [2, 3]],
    ['NEL2', N2, [...Array(10).fill(0.5), -0.5, ...Array(9).fill(-0.5)], [9, 10, 19, 20]],
    ['NEL3', N3, [1, 2, 3, 4, 5, 6, 7, 7, 6, 5, 4, 3, 2, 1], [6, 7, 13, 14]],
    ['NEL4', N4, [1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6, 8, 7, 9, 8], [14, 15]],
    ['NEL5', N5, [0, 2.3, 0.4, 2.2, -2.4, -0.2, -2.5], [4, 7]],
    ['NEL6', N6, [1.2, 1.3, 0.2, 1.4, 1.5, -1.2, -1.3, -0.1, -1.4, -1.5], [5, 10]],
    ['NEL7', N7, [...Array(16).fill(0.3), 1.2], [15, 16]],
    ['NEL8', N8, [1.2, -1.3, 1.1, -1.4, 1.5, -1.2, 1.3, -1.1, 0.2], [8]],
    ['NEL8 one side only', N8, Array(8).fill(1.2), []],
  ];
  it.each(cases)('%s', (_name, rule, values, expected) => {
    expect(flagged(rule, values)).toEqual(expected);
  });
});

describe('semantics: strict comparisons, one-sided zones, the completing point', () => {
  const cases: [string, RunRule, number[], number[]][] = [
    ['a point exactly on a control limit is not beyond it', N1, [3, -3, 3.0000001], [3]],
    [
      'a point on the centre line breaks a same-side run',
      N2,
      [1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1],
      [14],
    ],
    ['equal neighbours break a trend', N3, [1, 2, 3, 3, 4, 5, 6, 7, 8], [9]],
    [
      'a zero step breaks an alternation',
      N4,
      [0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0],
      [20],
    ],
    ['exactly 2 sigma is not beyond 2 sigma', N5, [2, 2, 2.01, 2], []],
    ['2-of-3 counts one side at a time', N5, [2.5, -2.5, 2.5], [3]],
    ['opposite sides do not add up', N5, [2.5, -2.5, 0], []],
    ['the completing point must itself be beyond', N5, [0, 2.5, 2.5, 0], [3]],
    ['2-of-3 needs a full window of three points', N5, [2.5, 2.5], []],
    ['4-of-5 beyond 1 sigma', N6, [1.1, 1.1, 0, 1.1, 1.1, 0, 0], [5]],
    ['within 1 sigma is strict', N7, [...Array(14).fill(0.5), 1, ...Array(14).fill(0.5)], []],
    ['a mixture needs both sides beyond 1 sigma', N8, [1.5, -1.5, 1.5, -1.5, 1.5, -1.5, 1.5, 1], []],
  ];
  it.each(cases)('%s', (_name, rule, values, expected) => {
    expect(flagged(rule, values)).toEqual(expected);
  });

  it('reports the points forming the pattern, the newest last', () => {
    expect(checkRule(N5, std([2.5, 0, 2.6]))).toEqual([0, 2]);
    expect(checkRule(WE4, std([0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]))).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8,
    ]);
    expect(checkRule(N1, std([0, 9]))).toEqual([1]);
    expect(checkRule(N1, std([9, 0]))).toBeNull();
    expect(checkRule(N1, [])).toBeNull();
  });

  it('uses each point its own centre and sigma (limits varying with the sample size)', () => {
    // Points at 2.5 are beyond 2 sigma when sigma = 1, not when sigma = 1.5.
    const pts: ZonedPoint[] = [
      { value: 2.5, center: 0, sigma: 1.5, lcl: -4.5, ucl: 4.5 },
      { value: 2.5, center: 0, sigma: 1, lcl: -3, ucl: 3 },
      { value: 2.5, center: 0, sigma: 1.5, lcl: -4.5, ucl: 4.5 },
    ];
    expect(checkRule(N5, pts)).toBeNull();
    expect(checkRule(N5, [...pts.slice(0, 2), { value: 2.5, center: 0, sigma: 1, lcl: -3, ucl: 3 }])).toEqual(
      [1, 2],
    );
  });

  it('honours configured counts', () => {
    const run7: RunRule = { id: 'N2', kind: 'same-side', run: 7 };
    expect(flagged(run7, Array(8).fill(0.2))).toEqual([7, 8]);
    const threeOfFour: RunRule = { id: 'Z', kind: 'zone', count: 3, of: 4, sigmas: 1.5 };
    expect(flagged(threeOfFour, [1.6, 0, 1.6, 1.6, 0])).toEqual([4]);
  });
});
