import fc from 'fast-check';
import { CorruptRecordError, InvalidRecordError, UnknownSchemaVersionError } from './errors';
import { decodeMonitorState, encodeMonitorState, MONITOR_STATE_SCHEMA_VERSION, monitorStateIssues, validateMonitorStateKey, type MonitorState } from './monitor-state';
import type { CommitRunInput } from './records';
import { validateCommitRunInput } from './validation';

const context = { chamber: { toolId: 'T1', chamberId: 'C1' }, table: 'monitor_state' };

const judging: MonitorState = {
  phase: 'judging',
  modelVersion: 2,
  judgedRuns: 17,
  extensionCheckAt: null,
  mewma: [0.1, -0.2],
  levelOffsets: { 'RF Power': 0.5, 'Pressure@x': -1e-9 },
};

const stateArb: fc.Arbitrary<MonitorState> = fc.oneof(
  fc.record(
    { phase: fc.constant('collecting' as const), modelVersion: fc.integer({ min: 1, max: 0x7fffffff }), runs: fc.integer({ min: 0, max: 1e9 }), since: fc.integer({ min: 1, max: 1e12 }) },
    { requiredKeys: ['phase', 'modelVersion', 'runs'] },
  ),
  fc.record(
    {
      phase: fc.constant('judging' as const),
      modelVersion: fc.integer({ min: 1, max: 0x7fffffff }),
      judgedRuns: fc.integer({ min: 1, max: 1e9 }),
      extensionCheckAt: fc.option(fc.integer({ min: 1, max: 1e9 }), { nil: null }),
      mewma: fc.option(fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), { minLength: 1, maxLength: 8 }), { nil: null }),
      levelOffsets: fc.dictionary(
        // Names without control characters (what the store accepts), as SVID names are.
        fc.string({ minLength: 1, maxLength: 20 }).filter((s) => ![...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) && s !== '__proto__'),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        { maxKeys: 12 },
      ),
      // Re-centring after an equipment event, and the centre it learnt (ADR 0019).
      recentre: fc.record({ runs: fc.integer({ min: 0, max: 100 }), seen: fc.integer({ min: 0, max: 100 }) }),
      centre: fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), { maxLength: 20 }),
    },
    { requiredKeys: ['phase', 'modelVersion', 'judgedRuns', 'extensionCheckAt', 'mewma', 'levelOffsets'] },
  ),
);

describe('monitor state record', () => {
  it('round-trips every valid state through its stored text', () => {
    fc.assert(
      fc.property(stateArb, (state) => {
        expect(monitorStateIssues(state)).toEqual([]);
        const back = decodeMonitorState(MONITOR_STATE_SCHEMA_VERSION, encodeMonitorState(state), context);
        // -0 is stored as 0 by JSON; every other number comes back exactly.
        expect(back).toEqual(JSON.parse(JSON.stringify(state)));
      }),
    );
  });

  it('lists every problem of an invalid state', () => {
    const issues = monitorStateIssues({ phase: 'judging', modelVersion: 0, judgedRuns: 1.5, extensionCheckAt: -1, mewma: [NaN], levelOffsets: { a: Infinity }, extra: 1 });
    expect(issues.map((i) => i.path).sort()).toEqual(
      ['state.extensionCheckAt', 'state.extra', 'state.judgedRuns', 'state.levelOffsets.a', 'state.mewma', 'state.modelVersion'].sort(),
    );
    expect(monitorStateIssues({ phase: 'learning', modelVersion: 1 }).map((i) => i.path)).toEqual(['state.phase']);
    expect(monitorStateIssues({ phase: 'collecting', modelVersion: 1, runs: -1 }).map((i) => i.path)).toEqual(['state.runs']);
    expect(monitorStateIssues({ phase: 'collecting', modelVersion: 1, runs: 0, since: 0 }).map((i) => i.path)).toEqual(['state.since']);
    expect(monitorStateIssues({ ...judging, recentre: { runs: -1, seen: 0 }, centre: [NaN] }).map((i) => i.path)).toEqual(['state.recentre.runs', 'state.centre']);
    expect(monitorStateIssues({ ...judging, recentre: { runs: 1 } }).map((i) => i.path)).toEqual(['state.recentre.seen']);
    expect(monitorStateIssues([]).map((i) => i.path)).toEqual(['state']);
  });

  it('refuses a schema it does not know and text that is not a state', () => {
    const text = encodeMonitorState(judging);
    expect(() => decodeMonitorState(2, text, context)).toThrow(UnknownSchemaVersionError);
    expect(() => decodeMonitorState(MONITOR_STATE_SCHEMA_VERSION, '{"phase":', context)).toThrow(CorruptRecordError);
    expect(() => decodeMonitorState(MONITOR_STATE_SCHEMA_VERSION, '{"phase":"judging"}', context)).toThrow(/judgedRuns/);
  });

  it('is validated with the commit that carries it, which must name the recipe', () => {
    const commit: CommitRunInput = { chamber: context.chamber, epoch: 1, ownerId: 'd-0', sequence: 3, runId: 'r3', committedAt: new Date(0), points: [], monitorState: judging };
    expect(() => validateCommitRunInput(commit)).toThrow(/recipe: is required with a monitor state/);
    expect(() => validateCommitRunInput({ ...commit, recipe: 'ETCH-1' })).not.toThrow();
    expect(() => validateCommitRunInput({ ...commit, recipe: 'ETCH-1', monitorState: { ...judging, judgedRuns: 0 } })).toThrow(InvalidRecordError);
  });

  it('keys a read by a valid chamber and recipe', () => {
    expect(() => validateMonitorStateKey(context.chamber, 'ETCH-1')).not.toThrow();
    expect(() => validateMonitorStateKey(context.chamber, '')).toThrow(/recipe/);
    expect(() => validateMonitorStateKey({ toolId: 'a:b', chamberId: 'C' }, 'R')).toThrow(/chamber/);
  });
});
