import { StreamCheck, StreamCheckDeps } from './stream-check';

class MissingError extends Error {
  override readonly name = 'MissingError';
}

/** A stream the test changes between checks, and everything the check did, in order. */
function setup() {
  const stream: { id: string | undefined; down: boolean; ensureFails: boolean; restartFails: boolean } = {
    id: 'created-1',
    down: false,
    ensureFails: false,
    restartFails: false,
  };
  const log: string[] = [];
  const deps: StreamCheckDeps = {
    streamId: async () => {
      if (stream.down) throw new Error('timeout');
      if (stream.id === undefined) throw new MissingError('stream not found');
      return stream.id;
    },
    isMissing: (err) => err instanceof MissingError,
    ensureStreams: async () => {
      log.push('ensure');
      if (stream.ensureFails) throw new Error('no jetstream');
      stream.id ??= 'created-2';
    },
    wakeAll: () => void log.push('wake'),
    restartFeed: async () => {
      log.push('restart feed');
      if (stream.restartFails) throw new Error('consumer not created');
    },
    observer: {
      status: (missing) => log.push(`status missing=${missing}`),
      missing: () => log.push('missing'),
      back: () => log.push('back'),
      streamsCreated: (ok, err) => log.push(ok ? 'created' : `create failed: ${(err as Error).message}`),
      recreated: (was, now) => log.push(`recreated ${was} -> ${now}`),
      recreateIncomplete: (err) => log.push(`incomplete: ${(err as Error).message}`),
      checkFailed: (err) => log.push(`check failed: ${(err as Error).message}`),
    },
  };
  return { check: new StreamCheck(deps), stream, log };
}

describe('StreamCheck', () => {
  it('does nothing before init, and reports a present stream unchanged', async () => {
    const { check, log } = setup();
    await check.check();
    expect(log).toEqual([]);
    await check.init();
    expect(check.streamId).toBe('created-1');
    await check.check();
    expect(log).toEqual(['status missing=false']);
    expect(check.missing).toBe(false);
  });

  it('a recreated stream: wakes every worker, creates the other streams, restarts the feed, then remembers the new identity', async () => {
    const { check, stream, log } = setup();
    await check.init();
    stream.id = 'created-9';
    await check.check();
    expect(log).toEqual(['status missing=false', 'recreated created-1 -> created-9', 'wake', 'ensure', 'restart feed']);
    expect(check.streamId).toBe('created-9');
    log.length = 0;
    await check.check();
    expect(log).toEqual(['status missing=false']);
  });

  it('a recreation whose feed cannot restart is not noted as seen: the next check does it all again', async () => {
    const { check, stream, log } = setup();
    await check.init();
    stream.id = 'created-9';
    stream.restartFails = true;
    await check.check();
    expect(log.slice(-1)).toEqual(['incomplete: consumer not created']);
    expect(check.streamId).toBe('created-1');
    stream.restartFails = false;
    log.length = 0;
    await check.check();
    expect(log).toEqual(['status missing=false', 'recreated created-1 -> created-9', 'wake', 'ensure', 'restart feed']);
    expect(check.streamId).toBe('created-9');
  });

  it('a missing stream: reported once, created again at each check until it exists, then reported back', async () => {
    const { check, stream, log } = setup();
    await check.init();
    stream.id = undefined;
    stream.ensureFails = true;
    await check.check();
    await check.check();
    expect(check.missing).toBe(true);
    expect(log).toEqual(['missing', 'status missing=true', 'ensure', 'create failed: no jetstream', 'status missing=true', 'ensure', 'create failed: no jetstream']);
    stream.ensureFails = false;
    log.length = 0;
    await check.check();
    expect(log).toEqual(['status missing=true', 'ensure', 'created']);
    log.length = 0;
    // Created again: a new identity, so the workers re-check and the feed starts again.
    await check.check();
    expect(log).toEqual(['back', 'status missing=false', 'recreated created-1 -> created-2', 'wake', 'ensure', 'restart feed']);
    expect(check.missing).toBe(false);
  });

  it('another failure (NATS unavailable) changes nothing', async () => {
    const { check, stream, log } = setup();
    await check.init();
    stream.down = true;
    await check.check();
    expect(log).toEqual(['check failed: timeout']);
    expect(check.missing).toBe(false);
    expect(check.streamId).toBe('created-1');
  });

  it('runs one check at a time, and none after stop', async () => {
    const { check, log } = setup();
    await check.init();
    await Promise.all([check.check(), check.check(), check.check()]);
    expect(log).toEqual(['status missing=false']);
    check.stop();
    await check.check();
    expect(log).toEqual(['status missing=false']);
  });
});
