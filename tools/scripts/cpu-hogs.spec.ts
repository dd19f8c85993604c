import { HogCountError, parseHogCount, startCpuHogs } from './cpu-hogs';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

describe('parseHogCount', () => {
  it.each([
    [undefined, 2],
    ['', 2],
    ['0', 0],
    ['3', 3],
  ])('%j -> %d', (text, n) => expect(parseHogCount(text)).toBe(n));

  it.each(['-1', '1.5', 'two', '65'])('rejects %j with the variable named', (text) => {
    expect(() => parseHogCount(text)).toThrow(HogCountError);
    expect(() => parseHogCount(text)).toThrow(/TEST_BUSY_HOGS/);
  });
});

describe('startCpuHogs', () => {
  it('runs one process per hog until stopped, then none', async () => {
    const hogs = startCpuHogs(2);
    expect(hogs.pids).toHaveLength(2);
    expect(new Set(hogs.pids).size).toBe(2);
    for (const pid of hogs.pids) expect(alive(pid)).toBe(true);
    await hogs.stop();
    for (const pid of hogs.pids) expect(alive(pid)).toBe(false);
    await hogs.stop(); // idempotent
  });

  it('starts nothing for zero hogs', async () => {
    const hogs = startCpuHogs(0);
    expect(hogs.pids).toEqual([]);
    await hogs.stop();
  });
});
