import { InvalidRecordError } from './errors';
import type { CommitRunInput, LimitSetRecord, TraceRecord } from './records';
import {
  canonicalJson,
  isJsonObject,
  parseStrategyScope,
  strategyScope,
  strategyScopeConflicts,
  strategyScopeKind,
  strategyScopesForRun,
  validateStrategyScopes,
  validateCommitRunInput,
  validateLimitSet,
  validateTraceRecord,
} from './validation';

const chamber = { toolId: 'T1', chamberId: 'C1' };

function commit(over: Partial<CommitRunInput> = {}): CommitRunInput {
  return {
    chamber,
    epoch: 1,
    ownerId: 'defender-0',
    sequence: 1,
    runId: 'run-1',
    committedAt: new Date(0),
    points: [{ indicatorKey: 'k1', value: 1.5, flags: 0 }],
    ...over,
  };
}

function issuesOf(fn: () => void): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidRecordError) return err.issues.map((i) => i.path);
    throw err;
  }
  return [];
}

describe('validateCommitRunInput', () => {
  it('accepts a valid commit', () => {
    expect(issuesOf(() => validateCommitRunInput(commit()))).toEqual([]);
  });

  it('reports every problem at once', () => {
    const paths = issuesOf(() =>
      validateCommitRunInput(
        commit({
          chamber: { toolId: 'a:b', chamberId: '' },
          epoch: -1,
          sequence: 0,
          runId: '',
          committedAt: new Date(NaN),
          points: [
            { indicatorKey: 'k', value: NaN, flags: 0 },
            { indicatorKey: 'k', value: 1, flags: -1, chart: { ewma: Infinity } },
          ],
          alarms: [
            { ruleId: 'r', indicatorKey: 'k', action: 'ALARM', value: 1, message: '' },
            { ruleId: 'r', indicatorKey: 'k', action: 'ALARM', value: 1, message: '' },
          ],
        }),
      ),
    );
    expect(paths).toEqual([
      'chamber.toolId',
      'chamber.chamberId',
      'epoch',
      'sequence',
      'runId',
      'committedAt',
      'points[0].value',
      'points[1].flags',
      'points[1].chart.ewma',
      'points[1].indicatorKey',
      'alarms[1]',
    ]);
  });
});

describe('validateLimitSet', () => {
  const limits: LimitSetRecord = {
    ...chamber,
    indicatorKey: 'k',
    version: 1,
    chartType: 'individuals',
    center: 10,
    sigma: 1,
    lcl: 7,
    ucl: 13,
    params: { nSigma: 3 },
    baseline: { reason: 'initial', runIds: ['r1'], excludedRunIds: [] },
    createdAt: new Date(0),
  };
  it('accepts attribute-chart limits with null sigma and limits', () => {
    expect(issuesOf(() => validateLimitSet({ ...limits, chartType: 'u', sigma: null, lcl: null, ucl: null }))).toEqual([]);
  });
  it.each([
    [{ center: NaN }, 'center'],
    [{ lcl: 14 }, 'lcl'],
    [{ sigma: -1 }, 'sigma'],
    [{ version: 0 }, 'version'],
    [{ params: { x: NaN } }, 'params'],
  ])('rejects %j', (over, path) => {
    expect(issuesOf(() => validateLimitSet({ ...limits, ...(over as Partial<LimitSetRecord>) }))).toEqual([path]);
  });
});

describe('validateTraceRecord', () => {
  const base: TraceRecord = {
    toolId: 'T1',
    chamberId: 'C1',
    runId: 'r',
    timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 },
    svids: new Map([['a', new Float64Array(10)]]),
    steps: [{ name: 's1', startIndex: 0 }],
  };
  it('accepts a valid trace', () => {
    expect(issuesOf(() => validateTraceRecord(base))).toEqual([]);
  });
  it('rejects mismatched lengths, bad timing and unordered steps', () => {
    const paths = issuesOf(() =>
      validateTraceRecord({
        ...base,
        svids: new Map<string, Float64Array | Float32Array>([
          ['a', new Float64Array(10)],
          ['b', new Float32Array(9)],
        ]),
        timing: { kind: 'explicit', timesSeconds: new Float64Array(3) },
        steps: [
          { name: 's1', startIndex: 5 },
          { name: 's2', startIndex: 5 },
        ],
      }),
    );
    expect(paths).toEqual(['svids[b]', 'timing.timesSeconds', 'steps[1].startIndex']);
  });
});

describe('JSON helpers', () => {
  it('canonicalJson sorts keys at every level', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}');
  });
  it.each([[{ a: undefined }], [{ a: NaN }], [new Date(0)], [[1]], [null]])('isJsonObject rejects %p', (v) => {
    expect(isJsonObject(v)).toBe(false);
  });
  it('strategyScope builds the documented keys', () => {
    expect(strategyScope({ kind: 'default' })).toBe('default');
    expect(strategyScope({ kind: 'recipe', recipe: 'ETCH-1' })).toBe('recipe/ETCH-1');
    expect(strategyScope({ kind: 'chamber', chamber })).toBe('chamber/T1:C1');
    expect(strategyScope({ kind: 'chamber', chamber, recipe: 'R' })).toBe('chamber/T1:C1/recipe/R');
    expect(() => strategyScope({ kind: 'chamber', chamber: { toolId: 'a b', chamberId: 'c' } })).toThrow(InvalidRecordError);
  });
});

describe('strategy scopes of a run', () => {
  it('names the kind of each scope of the lookup order, and builtin for none', () => {
    expect(strategyScopesForRun(chamber, 'ETCH-1').map(strategyScopeKind)).toEqual(['chamber_recipe', 'chamber', 'legacy_key', 'recipe', 'default']);
    expect(strategyScopeKind(undefined)).toBe('builtin');
  });

  it('looks up the most specific scope first, the legacy key as a deprecated chamber alias', () => {
    expect(strategyScopesForRun(chamber, 'ETCH-1')).toEqual([
      { scope: 'chamber/T1:C1/recipe/ETCH-1', chamber: 'T1:C1', recipe: 'ETCH-1', deprecated: false },
      { scope: 'chamber/T1:C1', chamber: 'T1:C1', deprecated: false },
      { scope: 'T1:C1', chamber: 'T1:C1', deprecated: true },
      { scope: 'recipe/ETCH-1', recipe: 'ETCH-1', deprecated: false },
      { scope: 'default', deprecated: false },
    ]);
    expect(strategyScopesForRun(chamber).map((s) => s.scope)).toEqual(['chamber/T1:C1', 'T1:C1', 'default']);
    expect(() => strategyScopesForRun(chamber, 'bad\nrecipe')).toThrow(InvalidRecordError);
    // The longest ids and recipe a notification may carry still make valid scopes to look up.
    const longest = strategyScopesForRun({ toolId: 't'.repeat(128), chamberId: 'c'.repeat(128) }, 'r'.repeat(256)).map((s) => s.scope);
    expect(longest[0]).toHaveLength(529);
    expect(() => validateStrategyScopes(longest)).not.toThrow();
    expect(() => strategyScopesForRun({ toolId: 'a b', chamberId: 'C' }, 'R')).toThrow(InvalidRecordError);
  });

  it('parses every scope it builds back to the same meaning', () => {
    for (const step of strategyScopesForRun(chamber, 'R/with/slashes')) expect(parseStrategyScope(step.scope)).toEqual(step);
  });

  it.each([[''], ['chamber/'], ['chamber/T1'], ['chamber/T1:C1/recipe/'], ['recipe/'], ['T1'], ['a:b:c'], ['defaults'], ['x'.repeat(1025)], ['recipe/a\u0000']])(
    'parseStrategyScope refuses %j with a clear error',
    (scope) => {
      expect(() => parseStrategyScope(scope)).toThrow(InvalidRecordError);
    },
  );

  it('validateStrategyScopes bounds the list and lists every problem', () => {
    expect(() => validateStrategyScopes(['default', 'recipe/R', 'T1:C1'])).not.toThrow();
    expect(issuesOf(() => validateStrategyScopes([]))).toEqual(['scopes']);
    expect(issuesOf(() => validateStrategyScopes(Array.from({ length: 17 }, (_, i) => `recipe/${i}`)))).toEqual(['scopes']);
    expect(issuesOf(() => validateStrategyScopes(['default', 'nope', 'default', '']))).toEqual(['scopes[1]', 'scopes[2]', 'scopes[3]']);
  });

  it('strategyScopeConflicts: a document may repeat its key, never name another chamber or recipe', () => {
    const [chamberRecipe, chamberOnly, legacy, recipeOnly, fallback] = strategyScopesForRun(chamber, 'R');
    if (!chamberRecipe || !chamberOnly || !legacy || !recipeOnly || !fallback) throw new Error('five scopes expected');
    expect(strategyScopeConflicts({}, chamberOnly)).toEqual([]);
    expect(strategyScopeConflicts({ chamber: 'T1:C1' }, legacy)).toEqual([]);
    expect(strategyScopeConflicts({ chamber: 'T1:C1', recipe: 'R' }, chamberRecipe)).toEqual([]);
    expect(strategyScopeConflicts({ recipe: 'R' }, recipeOnly)).toEqual([]);
    const other = strategyScopeConflicts({ chamber: 'X:Y' }, chamberOnly);
    expect(other).toEqual([{ path: 'scope.chamber', message: 'names chamber X:Y but it is stored under scope "chamber/T1:C1", for chamber T1:C1' }]);
    expect(strategyScopeConflicts({ recipe: 'R2' }, chamberRecipe).map((i) => i.path)).toEqual(['scope.recipe']);
    expect(strategyScopeConflicts({ recipe: 'R' }, chamberOnly).map((i) => i.path)).toEqual(['scope.recipe']);
    expect(strategyScopeConflicts({ chamber: 'T1:C1', recipe: 'R' }, fallback).map((i) => i.path)).toEqual(['scope.chamber', 'scope.recipe']);
  });
});
