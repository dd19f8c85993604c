import { RetryAbortedError, retrying, retryingUntilStopped, sleepUnlessAborted, supervise } from './retry';

/** A fixed uniform draw: every delay is exactly three quarters of its ceiling. */
const random = () => 0.5;

describe('retrying: the workspace retry loop', () => {
  it('retries every failure with the backoff until fn succeeds, reporting each failure and its wait', async () => {
    const waits: number[] = [];
    const seen: [string, number, number][] = [];
    let calls = 0;
    const value = await retrying(
      async (attempt) => {
        calls++;
        if (attempt < 3) throw new Error(`down ${attempt}`);
        return 'up';
      },
      { what: 'connect', baseMs: 100, maxMs: 250, random, sleep: async (ms) => void waits.push(ms), onRetry: (err, attempt, ms) => seen.push([(err as Error).message, attempt, ms]) },
    );
    expect(value).toBe('up');
    expect(calls).toBe(4);
    // Ceilings 100, 200, 250 (capped): equal jitter at the draw 0.5 is 3/4 of each.
    expect(waits).toEqual([75, 150, 187.5]);
    expect(seen).toEqual([
      ['down 0', 0, 75],
      ['down 1', 1, 150],
      ['down 2', 2, 187.5],
    ]);
  });

  it('throws a failure that is not retryable as it is, at once; every failure is told first', async () => {
    const fatal = new TypeError('bad config');
    let calls = 0;
    const failures: number[] = [];
    const run = retrying(
      async (attempt) => {
        calls++;
        throw attempt === 0 ? new Error('down') : fatal;
      },
      { what: 'open', baseMs: 1, maxMs: 1, random, onFailure: (_err, attempt) => failures.push(attempt), retryable: (err) => !(err instanceof TypeError), sleep: async () => undefined },
    );
    await expect(run).rejects.toBe(fatal);
    expect(calls).toBe(2);
    // Every failure is told, the one not retried too.
    expect(failures).toEqual([0, 1]);
  });

  it('stops when its signal aborts: no further attempt, the wait cut short, the last failure as the cause', async () => {
    const stop = new AbortController();
    let calls = 0;
    const run = retrying(
      async () => {
        calls++;
        throw new Error('still down');
      },
      // The real wait (a minute): the abort must end it, not its timer.
      { what: 'connect', baseMs: 60_000, maxMs: 60_000, random, signal: stop.signal, onRetry: () => stop.abort() },
    );
    await expect(run).rejects.toThrow(RetryAbortedError);
    await expect(run).rejects.toMatchObject({ message: 'connect: stopped before it succeeded', cause: { message: 'still down' } });
    expect(calls).toBe(1);
  });

  it('an aborted signal stops it before the first attempt', async () => {
    const stop = new AbortController();
    stop.abort();
    let calls = 0;
    await expect(retrying(async () => void calls++, { what: 'x', baseMs: 1, maxMs: 1, random, signal: stop.signal })).rejects.toThrow(RetryAbortedError);
    expect(calls).toBe(0);
  });
});

describe('retryingUntilStopped', () => {
  it("resolves with fn's value, or with undefined once stopped; a failure it may not retry still throws", async () => {
    const stop = new AbortController();
    await expect(retryingUntilStopped(async () => 7, { what: 'x', baseMs: 1, maxMs: 1, random, signal: stop.signal })).resolves.toBe(7);
    const stopped = retryingUntilStopped(
      async () => {
        throw new Error('down');
      },
      { what: 'x', baseMs: 60_000, maxMs: 60_000, random, signal: stop.signal, onRetry: () => stop.abort() },
    );
    await expect(stopped).resolves.toBeUndefined();
    const fatal = new TypeError('bad');
    await expect(
      retryingUntilStopped(
        async () => {
          throw fatal;
        },
        { what: 'x', baseMs: 1, maxMs: 1, random, signal: new AbortController().signal, retryable: () => false },
      ),
    ).rejects.toBe(fatal);
  });
});

describe('supervise: the workspace supervised loop', () => {
  it('restarts a run that ends or fails after the backoff, from the first delay again once it was healthy, until stopped', async () => {
    const stop = new AbortController();
    const log: string[] = [];
    let runs = 0;
    await supervise(
      async (healthy) => {
        runs++;
        if (runs === 1) throw new Error('no server');
        if (runs === 2) throw new Error('still none');
        if (runs === 3) {
          healthy();
          return; // the server ended a working watch
        }
        if (runs === 4) throw new Error('lost again');
        stop.abort(); // the owner stops during the fifth run
      },
      {
        baseMs: 100,
        maxMs: 1000,
        random,
        signal: stop.signal,
        sleep: async (ms) => void log.push(`wait ${ms}`),
        onFailure: (err, attempt, ms) => log.push(`failed ${attempt}: ${(err as Error).message} (${ms})`),
        onEnd: (attempt, ms) => log.push(`ended ${attempt} (${ms})`),
      },
    );
    expect(runs).toBe(5);
    expect(log).toEqual([
      'failed 0: no server (75)',
      'wait 75',
      'failed 1: still none (150)',
      'wait 150',
      // Healthy: back to the first delay.
      'ended 0 (75)',
      'wait 75',
      'failed 1: lost again (150)',
      'wait 150',
    ]);
  });

  it('starts nothing once stopped, and a stop during a wait ends it at once', async () => {
    const stopped = new AbortController();
    stopped.abort();
    let runs = 0;
    await supervise(async () => void runs++, { baseMs: 1, maxMs: 1, random, signal: stopped.signal });
    expect(runs).toBe(0);
    const stop = new AbortController();
    // The real wait (a minute) after the first run: the stop must end it.
    await supervise(async () => void runs++, { baseMs: 60_000, maxMs: 60_000, random, signal: stop.signal, onEnd: () => stop.abort() });
    expect(runs).toBe(1);
  });
});

describe('sleepUnlessAborted', () => {
  it('resolves at once for an aborted signal, and when the signal aborts during the wait', async () => {
    const stopped = new AbortController();
    stopped.abort();
    await sleepUnlessAborted(60_000, stopped.signal);
    const stop = new AbortController();
    const wait = sleepUnlessAborted(60_000, stop.signal);
    stop.abort();
    await wait;
  });

  it('resolves after its time without a signal', async () => {
    await expect(sleepUnlessAborted(1)).resolves.toBeUndefined();
  });
});
