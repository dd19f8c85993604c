import { levelCentre, levelTerms, nextLevelOffsets } from './level-centre';

describe('level centre', () => {
  const variables = ['R|m/P@Main:mean', 'R|m/P@Main:max', 'R|m/P@Main:std', 'R|m/P@Main:integral', 'R|m/P@Etch:first', 'R|m/F@Main:max-mean', 'R|m/F@Main:p95', 'R|other'];
  const center = [10, 12, 1, 600, 20, 2, 50, 7];
  const levels = levelTerms(variables, center);

  it('moves level statistics one for one, an integral by its window length, nothing else', () => {
    expect(levels.svids).toEqual(['F', 'P']);
    expect(levels.terms).toEqual([
      { svid: 'P', gain: 1, level: true },
      { svid: 'P', gain: 1, level: true },
      null,
      { svid: 'P', gain: 60, level: false }, // 600 / mean 10: a 60 s window
      { svid: 'P', gain: 1, level: true },
      null,
      { svid: 'F', gain: 1, level: true },
      null,
    ]);
    expect(levelCentre(center, levels, new Map([['P', 0.5]]))).toEqual([10.5, 12.5, 1, 630, 20.5, 2, 50, 7]);
    expect(levelCentre(center, levels, new Map())).toEqual(center);
  });

  it("moves each SVID's offset by lambda toward the run's mean level deviation; an SVID without a level value keeps it", () => {
    const run = [11, 13.5, 1, 700, 20.5, 2, NaN, 7];
    const next = nextLevelOffsets(center, levels, new Map([['F', 0.2]]), run, 0.1);
    // P: deviations 1, 1.5, 0.5 (mean 1) -> 0.9 x 0 + 0.1 x 1; F: no p95 in the run -> unchanged.
    expect(next.get('P')).toBeCloseTo(0.1, 12);
    expect(next.get('F')).toBe(0.2);
    // A sustained shift is followed geometrically: after k quiet runs, 1 - (1 - lambda)^k of it.
    let offsets: Map<string, number> = new Map();
    for (let k = 0; k < 20; k++) offsets = nextLevelOffsets(center, levels, offsets, center.map((c) => c + 2), 0.05);
    expect(offsets.get('P')).toBeCloseTo(2 * (1 - 0.95 ** 20), 12);
  });

  it('has no integral gain when the window has no charted mean or a zero one', () => {
    expect(levelTerms(['m/P@A:integral'], [5]).terms).toEqual([null]);
    // The extremes of a moving average follow the level; their distance from the mean does not.
    expect(levelTerms(['m/P@A:ma_max', 'm/P@A:ma_max-mean'], [5, 1]).terms).toEqual([{ svid: 'P', gain: 1, level: true }, null]);
    expect(levelTerms(['m/P@A:mean', 'm/P@A:integral'], [0, 5]).terms[1]).toBeNull();
  });
});

describe('levelTerms of attribute indicators (issue 49, item 4)', () => {
  it('keeps the Phase I centre of a few-level sensor and leaves its SVID offset to the others', () => {
    const variables = ['m/P@A:mean', 'm/P@B:mean', 'm/S@A:mean'];
    const levels = levelTerms(variables, [10, 20, 4], ['m/P@B:mean', 'm/S@A:mean']);
    expect(levels.terms).toEqual([{ svid: 'P', gain: 1, level: true }, null, null]);
    expect(levels.svids).toEqual(['P']);
    const next = nextLevelOffsets([10, 20, 4], levels, new Map(), [11, 25, 3], 1);
    expect(next.get('P')).toBe(1);
    expect(levelCentre([10, 20, 4], levels, next)).toEqual([11, 20, 4]);
  });
});
