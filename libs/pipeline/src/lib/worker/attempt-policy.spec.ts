import { backoffDelayMs } from '@defender/backoff';
import { FencedError } from '@defender/contracts';
import { afterFailure, AttemptPolicy, AttemptTimeoutError, DeadLetterSignal, StoppedSignal } from './attempt-policy';
import { chamber, FakeClock, outage, settle, until } from './testing/fake-ports';

const opts = { processTimeoutMs: 500, maxAttempts: 3, maxOutageBackoffMs: 400 };

function setup(random = () => 0.5) {
  const clock = new FakeClock();
  const stop = new AbortController();
  const paused: string[] = [];
  const sleeps: number[] = [];
  const sleep = (ms: number, signal: AbortSignal) => (sleeps.push(ms), clock.sleep(ms, signal));
  const policy = new AttemptPolicy('t1:c1', stop.signal, opts, { monotonic: clock.monotonic, sleep, random, observer: { paused: (_k, what) => paused.push(what) } });
  return { clock, stop, paused, sleeps, policy };
}

/** A step that fails with an outage `n` times, then answers `value`. */
function flaky<T>(n: number, value: T): { fn: () => Promise<T>; calls: () => number } {
  let calls = 0;
  return { fn: async () => (++calls <= n ? Promise.reject(outage()) : value), calls: () => calls };
}

/** Settles `p` into a record the test can look at without awaiting it. */
function track<T>(p: Promise<T>): { done: boolean; value?: T; error?: unknown } {
  const r: { done: boolean; value?: T; error?: unknown } = { done: false };
  p.then(
    (value) => Object.assign(r, { done: true, value }),
    (error: unknown) => Object.assign(r, { done: true, error }),
  );
  return r;
}

describe('afterFailure', () => {
  const runId = () => 'r7';
  it.each([
    ['a fenced owner ends the worker', new FencedError(chamber, 1, 2, 'defender-2'), 1, { kind: 'rethrow' }],
    ['a stopped worker ends', new StoppedSignal(), 1, { kind: 'rethrow' }],
    ['an outage never counts, even at the last attempt', outage(), 3, { kind: 'pause' }],
    ['another failure is retried while attempts are left', new Error('boom'), 2, { kind: 'retry' }],
  ])('%s', (_name, err, attempt, decision) => {
    expect(afterFailure(err, attempt, 3, runId)).toEqual(decision);
  });

  it('bad input is dead-lettered at once with its reason, detail and run id', () => {
    expect(afterFailure(new DeadLetterSignal('missing-trace', 'no trace', 'r1'), 1, 3, runId)).toEqual({ kind: 'dead-letter', reason: 'missing-trace', detail: 'no trace', runId: 'r1', failedAttempt: false });
  });

  it('the last failed attempt dead-letters the run as processing-failed, naming the attempts and the error', () => {
    expect(afterFailure(new TypeError('x is undefined'), 3, 3, runId)).toEqual({
      kind: 'dead-letter',
      reason: 'processing-failed',
      detail: '3 attempts; last: TypeError: x is undefined',
      runId: 'r7',
      failedAttempt: true,
    });
    expect(afterFailure('not an error', 1, 1, runId)).toMatchObject({ reason: 'processing-failed', detail: '1 attempts; last: not an error' });
  });
});

describe('AttemptPolicy.outageRetry', () => {
  it('retries an outage with the workspace backoff (libs/backoff) until the call answers, reporting each pause', async () => {
    const { clock, paused, sleeps, policy } = setup(() => 0);
    const step = flaky(5, 'ok');
    const r = track(policy.outageRetry('trace', step.fn));
    await until(() => r.done, clock);
    expect(r.value).toBe('ok');
    expect(step.calls()).toBe(6);
    expect(paused).toEqual(Array(5).fill('trace'));
    expect(sleeps).toEqual([0, 1, 2, 3, 4].map((a) => backoffDelayMs(a, { baseMs: 100, maxMs: 400, random: () => 0 })));
    expect(Math.max(...sleeps)).toBeLessThanOrEqual(opts.maxOutageBackoffMs);
  });

  it('passes any other failure through at once', async () => {
    const { policy, paused } = setup();
    let calls = 0;
    await expect(policy.outageRetry('history', async () => Promise.reject(new Error(`broken ${++calls}`)))).rejects.toThrow('broken 1');
    expect(paused).toEqual([]);
  });

  it('a stopped worker takes no further step, but a commit is let through', async () => {
    const { stop, policy } = setup();
    stop.abort();
    await expect(policy.outageRetry('read', async () => 1)).rejects.toBeInstanceOf(StoppedSignal);
    await expect(policy.outageRetry('commit', async () => 'applied')).resolves.toBe('applied');
  });

  it('stopping during an outage ends the backoff at once', async () => {
    const { stop, clock, policy } = setup();
    const r = track(policy.outageRetry('read', async () => Promise.reject(outage())));
    await until(() => clock.sleeping > 0);
    stop.abort();
    await settle();
    expect(r.error).toBeInstanceOf(StoppedSignal);
  });
});

describe('AttemptPolicy.withTimeout', () => {
  it('an attempt that outlasts its bound is abandoned at its next step, and ends before withTimeout does (attempts never overlap)', async () => {
    const { clock, policy } = setup();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let stepRan = false;
    const r = track(
      policy.withTimeout(async () => {
        await gate;
        return policy.outageRetry('commit', async () => ((stepRan = true), 'applied'));
      }),
    );
    await until(() => clock.sleeping > 0);
    clock.advance(opts.processTimeoutMs);
    await settle();
    // Timed out, but still waiting for the attempt to end.
    expect(r.done).toBe(false);
    release();
    await settle();
    expect(stepRan).toBe(false);
    expect(r.error).toBeInstanceOf(AttemptTimeoutError);
    expect((r.error as Error).message).toBe('run took longer than 500 ms');
    expect(((r.error as Error).cause as Error).message).toBe('abandoned at commit: the attempt timed out');
  });

  it('an attempt whose commit was under way when it timed out counts with the commit\'s outcome', async () => {
    const { clock, policy } = setup();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const r = track(policy.withTimeout(() => policy.outageRetry('commit', async () => (await gate, 'applied'))));
    await until(() => clock.sleeping > 0);
    clock.advance(opts.processTimeoutMs * 3);
    await settle();
    release();
    await settle();
    expect(r.value).toBe('applied');
  });

  it('time paused by an outage does not count against the bound', async () => {
    const { clock, policy } = setup();
    const step = flaky(8, 'applied');
    const started = clock.monotonic();
    const r = track(policy.withTimeout(() => policy.outageRetry('commit', step.fn)));
    await until(() => r.done, clock);
    expect(clock.monotonic() - started).toBeGreaterThan(opts.processTimeoutMs * 3);
    expect(r.value).toBe('applied');
  });

  it.each([
    [opts.processTimeoutMs - 1, 'applied'],
    [opts.processTimeoutMs + 1, 'timeout'],
  ])('concurrent reads paused by one outage count it once: %s ms after it the attempt is %s', async (afterOutage, expected) => {
    const { clock, policy } = setup();
    const a = flaky(3, 'a');
    const b = flaky(4, 'b');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let outageOver = false;
    const r = track(
      policy.withTimeout(async () => {
        await Promise.all([policy.outageRetry('trace', a.fn), policy.outageRetry('history', b.fn)]);
        outageOver = true;
        await gate;
        return policy.outageRetry('commit', async () => 'applied');
      }),
    );
    await until(() => outageOver, clock);
    clock.advance(afterOutage);
    await settle();
    release();
    await until(() => r.done);
    if (expected === 'applied') expect(r.value).toBe('applied');
    else expect(r.error).toBeInstanceOf(AttemptTimeoutError);
  });

  it('time reported as not counted (an evaluation, a wait for a fit slot) extends the bound', async () => {
    const { clock, policy } = setup();
    const r = track(
      policy.withTimeout(async () => {
        clock.advance(opts.processTimeoutMs * 4);
        policy.notCounted(opts.processTimeoutMs * 4);
        return policy.outageRetry('commit', async () => 'applied');
      }),
    );
    await settle();
    expect(r.value).toBe('applied');
  });

  it('a dead letter or a fence found after the bound passes through as it is', async () => {
    const { clock, policy } = setup();
    for (const err of [new DeadLetterSignal('no-indicators', 'none', 'r1'), new FencedError(chamber, 1, 2, 'd2')]) {
      let release!: () => void;
      const gate = new Promise<void>((res) => (release = res));
      const r = track(policy.withTimeout(async () => (await gate, Promise.reject(err))));
      await until(() => clock.sleeping > 0);
      clock.advance(opts.processTimeoutMs);
      await settle();
      release();
      await settle();
      expect(r.error).toBe(err);
    }
  });
});

describe('AttemptPolicy.pauseRun', () => {
  it('pauses for at most 500 ms, reported as a pause of the process', async () => {
    const { clock, paused, sleeps, policy } = setup();
    const r = track(policy.pauseRun(outage()));
    await until(() => r.done, clock);
    expect(r.error).toBeUndefined();
    expect(sleeps).toEqual([400]);
    expect(paused).toEqual(['process']);
  });

  it('a stop during the pause ends the worker', async () => {
    const { stop, policy } = setup();
    const r = track(policy.pauseRun(outage()));
    await settle();
    stop.abort();
    await settle();
    expect(r.error).toBeInstanceOf(StoppedSignal);
  });
});
