import { TraceValidationError, UnknownStepError, ChartConfigError } from './errors';
import { createTrace, sampleTime, type TraceInput } from './trace';
import { resolveWindow } from './window';

const base = (over: Partial<TraceInput> = {}): TraceInput => ({
  runId: 'run-1',
  timing: { kind: 'regular', startSeconds: 0, frequencyHz: 10 },
  svids: { p: new Float64Array(100), t: new Float32Array(100) },
  steps: [
    { name: 'stabilize', startIndex: 0 },
    { name: 'etch', startIndex: 20 },
    { name: 'purge', startIndex: 90 },
  ],
  ...over,
});

function issuesOf(input: TraceInput): string[] {
  try {
    createTrace(input);
  } catch (err) {
    if (err instanceof TraceValidationError) return err.issues.map((i) => `${i.code} ${i.path}`);
    throw err;
  }
  return [];
}

describe('createTrace', () => {
  it('accepts a valid trace without copying the sample arrays', () => {
    const input = base();
    const trace = createTrace(input);
    expect(trace.length).toBe(100);
    expect(trace.svids.get('p')).toBe((input.svids as Record<string, Float64Array>)['p']);
    expect(trace.steps).toEqual([
      { name: 'stabilize', start: 0, end: 20 },
      { name: 'etch', start: 20, end: 90 },
      { name: 'purge', start: 90, end: 100 },
    ]);
  });

  it('accepts a Map of SVIDs and explicit times', () => {
    const trace = createTrace({
      runId: 'r',
      timing: { kind: 'explicit', timesSeconds: Float64Array.of(0, 0.5, 0.5, 2) },
      svids: new Map([['x', Float64Array.of(1, 2, 3, 4)]]),
    });
    expect(sampleTime(trace.timing, 3)).toBe(2);
  });

  it('reports every problem at once: length mismatch, bad frequency, bad steps', () => {
    const issues = issuesOf(
      base({
        runId: '',
        timing: { kind: 'regular', startSeconds: NaN, frequencyHz: 0 },
        svids: { a: new Float64Array(10), b: new Float64Array(9), c: [1, 2] as unknown as Float64Array },
        steps: [
          { name: 'x', startIndex: 5 },
          { name: 'x', startIndex: 3 },
          { name: '', startIndex: 12 },
        ],
      }),
    );
    expect(issues).toEqual([
      'bad-run-id runId',
      'length-mismatch svids.b',
      'not-typed-array svids.c',
      'non-finite-time timing.startSeconds',
      'bad-timing timing.frequencyHz',
      'bad-step steps[1].name',
      'bad-step steps[1].startIndex',
      'bad-step steps[2].name',
      'bad-step steps[2].startIndex',
    ]);
  });

  it('rejects non-finite and decreasing explicit timestamps and a times/samples length mismatch', () => {
    expect(
      issuesOf({
        runId: 'r',
        timing: { kind: 'explicit', timesSeconds: Float64Array.of(0, NaN, 2, 1) },
        svids: { a: new Float64Array(4) },
      }),
    ).toEqual(['non-finite-time timing.timesSeconds[1]', 'time-not-monotonic timing.timesSeconds[3]']);
    expect(
      issuesOf({
        runId: 'r',
        timing: { kind: 'explicit', timesSeconds: Float64Array.of(0, 1) },
        svids: { a: new Float64Array(3) },
      }),
    ).toEqual(['length-mismatch timing.timesSeconds']);
    expect(
      issuesOf({
        runId: 'r',
        timing: { kind: 'explicit', timesSeconds: Float64Array.of(0, Infinity) },
        svids: { a: new Float64Array(2) },
      }),
    ).toEqual(['non-finite-time timing.timesSeconds[1]']);
  });

  it('rejects a trace without SVIDs and names the error class', () => {
    expect(() => createTrace(base({ svids: {} }))).toThrow(TraceValidationError);
    expect(() => createTrace(base({ svids: {} }))).toThrow(/svids: a trace needs at least one SVID/);
    const err = new TraceValidationError([], { cause: new Error('x') });
    expect(err.name).toBe('TraceValidationError');
    expect(err.cause).toBeInstanceOf(Error);
  });
});

describe('resolveWindow', () => {
  const trace = createTrace(base());

  it('resolves the context and a step', () => {
    expect(resolveWindow(trace, { kind: 'context' })).toEqual({ start: 0, end: 100 });
    expect(resolveWindow(trace, { kind: 'step', step: 'etch' })).toEqual({ start: 20, end: 90 });
  });

  it('trims by seconds from the step first / last sample, inclusive at exact sample times', () => {
    // etch samples are at 2.0 .. 8.9 s; trim 0.3 s -> first kept 2.3 s (index 23); trim end 0.5 s -> last kept 8.4 s (84).
    expect(
      resolveWindow(trace, { kind: 'step', step: 'etch', trimStartSeconds: 0.3, trimEndSeconds: 0.5 }),
    ).toEqual({ start: 23, end: 85 });
    expect(resolveWindow(trace, { kind: 'step', step: 'etch', trimStartSeconds: 0.25 })).toEqual({
      start: 23,
      end: 90,
    });
  });

  it('trims explicit-time traces by binary search', () => {
    const t = createTrace({
      runId: 'r',
      timing: { kind: 'explicit', timesSeconds: Float64Array.of(0, 1, 1.5, 4, 4.2, 7) },
      svids: { a: new Float64Array(6) },
      steps: [{ name: 's', startIndex: 0 }],
    });
    expect(resolveWindow(t, { kind: 'step', step: 's', trimStartSeconds: 1, trimEndSeconds: 2.8 })).toEqual({
      start: 1,
      end: 5,
    });
  });

  it('returns an empty range when the trims leave nothing', () => {
    const r = resolveWindow(trace, {
      kind: 'step',
      step: 'purge',
      trimStartSeconds: 0.6,
      trimEndSeconds: 0.6,
    });
    expect(r.end).toBeLessThanOrEqual(r.start);
  });

  it('throws UnknownStepError for a step the trace does not have, ChartConfigError for a negative trim', () => {
    expect(() => resolveWindow(trace, { kind: 'step', step: 'deposit' })).toThrow(UnknownStepError);
    expect(() => resolveWindow(trace, { kind: 'step', step: 'deposit' })).toThrow(
      'unknown recipe step "deposit" (trace has: stabilize, etch, purge)',
    );
    expect(() => resolveWindow(trace, { kind: 'step', step: 'etch', trimStartSeconds: -1 })).toThrow(
      ChartConfigError,
    );
  });
});
