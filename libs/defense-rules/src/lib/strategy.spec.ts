import { StrategyValidationError } from './errors';
import { NELSON_RULES, WESTERN_ELECTRIC_RULES } from './rules';
import {
  DEFAULT_STRATEGY,
  parseStrategy,
  resolveStrategy,
  validateStrategy,
  type DefenseStrategy,
} from './strategy';

const minimal = {
  schemaVersion: 1,
  name: 'etch-a',
  indicators: [{ id: 'p-mean', svid: 'pressure', statistic: 'mean' }],
};

function issues(doc: unknown): string[] {
  const r = validateStrategy(doc);
  if (r.ok) throw new Error('expected the document to be rejected');
  return r.issues.map((i) => `${i.path}: ${i.message}`);
}

describe('parseStrategy', () => {
  it('applies every default to a minimal document', () => {
    const s = parseStrategy(minimal);
    expect(s.scope).toEqual({});
    expect(s.escalation).toEqual([{ alarms: 2, withinRuns: 5, action: 'HOLD_CHAMBER' }]);
    expect(s.indicators[0]).toEqual({
      id: 'p-mean',
      svid: 'pressure',
      window: { kind: 'context' },
      statistic: 'mean',
      chart: { type: 'individuals', sigmaMethod: 'moving-range', nSigma: 3 },
      baseline: { minRuns: 20, exclusion: { maxPasses: 3 } },
      rules: Object.values(WESTERN_ELECTRIC_RULES),
      exposure: 'window-samples',
      action: 'ALARM',
    });
  });

  it('accepts JSON text, presets, named rules and count overrides', () => {
    const s = parseStrategy(
      JSON.stringify({
        ...minimal,
        scope: { chamber: 'T1:C2', recipe: 'ETCH' },
        indicators: [
          {
            id: 'p-mean',
            svid: 'pressure',
            statistic: 'mean',
            window: { kind: 'step', step: 'main', trimStartSeconds: 5 },
            rules: ['nelson'],
            spec: { usl: 12 },
            action: 'HOLD_CHAMBER',
          },
          {
            id: 't-max',
            svid: 'temp',
            statistic: 'max',
            rules: ['N1', { rule: 'N2', run: 7 }, { rule: 'N5', count: 3, of: 4, sigmas: 1.5 }],
          },
          { id: 'ewma', svid: 'temp', statistic: 'mean', chart: { type: 'ewma', lambda: 0.1, L: 2.7 } },
          { id: 'cusum', svid: 'temp', statistic: 'mean', chart: { type: 'cusum', headStart: 2.5 } },
          {
            id: 'missing',
            svid: '*',
            statistic: 'n_missing',
            chart: { type: 'p' },
            exposure: 'window-samples',
          },
        ],
      }),
    );
    expect(s.indicators[0].rules).toEqual(Object.values(NELSON_RULES));
    expect(s.indicators[1].rules).toEqual([
      NELSON_RULES.N1,
      { id: 'N2', kind: 'same-side', run: 7 },
      { id: 'N5', kind: 'zone', count: 3, of: 4, sigmas: 1.5 },
    ]);
    expect(s.indicators[2]).toMatchObject({
      chart: { type: 'ewma', lambda: 0.1, L: 2.7, sigmaMethod: 'moving-range' },
      rules: [],
    });
    expect(s.indicators[3].chart).toEqual({
      type: 'cusum',
      k: 0.5,
      h: 5,
      headStart: 2.5,
      resetOnSignal: false,
      sigmaMethod: 'moving-range',
    });
    expect(s.indicators[4]).toMatchObject({
      chart: { type: 'p', nSigma: 3 },
      rules: Object.values(WESTERN_ELECTRIC_RULES),
    });
  });

  it('reports every problem at once, with paths', () => {
    expect(
      issues({
        ...minimal,
        colour: 'red',
        indicators: [
          { id: 'a', svid: 'x', statistic: 'average' },
          { id: 'b', svid: 'x', statistic: 'mean', chart: { type: 'ewma', lambda: 1.5 } },
          { id: 'c/d', svid: '', statistic: 'mean', baseline: { minRuns: 1 } },
        ],
      }),
    ).toEqual([
      'indicators.0.statistic: Invalid option: expected one of "n"|"n_missing"|"mean"|"std"|"min"|"max"|"range"|"first"|"last"|"slope"|"integral"|"duration"|"median"|"p05"|"p95"|"noise"|"ma_max"|"ma_min"',
      'indicators.1.chart.lambda: Too big: expected number to be <=1',
      'indicators.2.id: must be 1+ characters of A-Z a-z 0-9 _ . : -',
      'indicators.2.svid: Too small: expected string to have >=1 characters',
      'indicators.2.baseline.minRuns: Too small: expected number to be >=2',
      ': Unrecognized key: "colour"',
    ]);
  });

  it('rejects semantic mistakes: rules on EWMA / CUSUM, counts a rule does not take, duplicates, spec and escalation order', () => {
    expect(
      issues({
        ...minimal,
        indicators: [
          { id: 'a', svid: 'x', statistic: 'mean', chart: { type: 'ewma' }, rules: ['N1'] },
          {
            id: 'b',
            svid: 'x',
            statistic: 'mean',
            rules: [{ rule: 'N1', run: 3 }, { rule: 'N6', count: 6 }, 'WE1', 'WE1'],
          },
          {
            id: 'a',
            svid: 'x',
            statistic: 'mean',
            spec: { lsl: 5, usl: 5 },
            chart: { type: 'cusum', h: 4, headStart: 4 },
            exposure: 'window-seconds',
          },
        ],
        escalation: [{ alarms: 6, withinRuns: 5, action: 'HOLD_CHAMBER' }],
      }),
    ).toEqual([
      'indicators.0.rules: run rules apply to individuals and attribute charts; a ewma chart signals on its own limits (leave rules empty)',
      'indicators.1.rules.0.run: N1 (beyond-limits) takes no counts',
      'indicators.1.rules.1: N6: count (6) must not exceed of (5)',
      'indicators.1.rules.3: rule WE1 is listed more than once',
      'indicators.2.id: duplicate indicator id "a"',
      'indicators.2.chart.headStart: must be less than h (4)',
      'indicators.2.exposure: applies to p, np and u charts only',
      'indicators.2.spec: lsl (5) must be less than usl (5)',
      'escalation.0: alarms (6) must not exceed withinRuns (5)',
    ]);
  });

  it('is versioned: another schemaVersion is refused with a clear message', () => {
    expect(issues({ ...minimal, schemaVersion: 2 })).toEqual([
      'schemaVersion: unsupported version 2 (this build reads 1)',
    ]);
    expect(issues({ ...minimal, schemaVersion: undefined })[0]).toMatch(/^schemaVersion: /);
    expect(issues('{"schemaVersion": 1,')[0]).toMatch(/^: not valid JSON/);
  });

  it('throws StrategyValidationError naming every issue', () => {
    expect(() => parseStrategy({ ...minimal, indicators: [] })).toThrow(StrategyValidationError);
    expect(() => parseStrategy({ ...minimal, indicators: [] })).toThrow(
      'invalid defense strategy: indicators: a strategy needs at least one indicator or a monitor',
    );
  });
});

describe('resolveStrategy', () => {
  it('picks the most specific matching scope, else the default', () => {
    const mk = (name: string, scope: object): DefenseStrategy => parseStrategy({ ...minimal, name, scope });
    const all = [
      mk('recipe', { recipe: 'R1' }),
      mk('any', {}),
      mk('chamber', { chamber: 'T1:C1' }),
      mk('both', { chamber: 'T1:C1', recipe: 'R1' }),
    ];
    expect(resolveStrategy(all, { chamber: 'T1:C1', recipe: 'R1' }).name).toBe('both');
    expect(resolveStrategy(all, { chamber: 'T1:C1', recipe: 'R2' }).name).toBe('chamber');
    expect(resolveStrategy(all, { chamber: 'T9:C1', recipe: 'R1' }).name).toBe('recipe');
    expect(resolveStrategy(all, { chamber: 'T9:C1' }).name).toBe('any');
    expect(resolveStrategy([], { chamber: 'T9:C1' })).toBe(DEFAULT_STRATEGY);
  });
});
