import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@defender/infra-harness';
import { killLeftovers, ManagedProcess, RUN_MARKER, writePidFile } from './processes';

/** Leftovers of a launcher killed with SIGKILL are stopped at the next start, and nothing else. */
describe('killLeftovers', () => {
  let dir: string;
  const started: ManagedProcess[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'local-fab-pids-'));
  });
  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop('SIGKILL', 0)));
    rmSync(dir, { recursive: true, force: true });
  });

  const sleeper = (name: string, env: Record<string, string>) => {
    const p = ManagedProcess.spawn({ name, role: 'defender', command: 'sleep', args: ['60'], env: { PATH: process.env['PATH'] ?? '', ...env }, logFile: null, port: 0 });
    started.push(p);
    return p;
  };

  it("kills a dead launcher's processes that carry its run marker; leaves the others and live launchers' alone", async () => {
    const runDir = join(dir, 'run-1');
    const liveRun = join(dir, 'run-2');
    mkdirSync(runDir);
    mkdirSync(liveRun);
    const ours = sleeper('ours', { [RUN_MARKER]: runDir });
    const otherRun = sleeper('other-run', { [RUN_MARKER]: join(dir, 'run-3') });
    const unmarked = sleeper('unmarked', {});
    const live = sleeper('live', { [RUN_MARKER]: liveRun });
    // A launcher pid that is certainly gone: a process that has exited.
    const gone = sleeper('gone', {});
    await gone.stop('SIGKILL', 0);
    writePidFile(runDir, [ours, otherRun, unmarked], gone.pid!);
    writePidFile(liveRun, [live], process.pid);
    // The marker must be in the environment before we look: wait until each process runs `sleep`
    // (after its exec, /proc/<pid>/environ is the environment it was given).
    const execd = (p: ManagedProcess) => readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0')[0] === 'sleep';
    await waitFor('the processes to run sleep', async () => [ours, otherRun, unmarked, live].every(execd), 30_000, 10);
    expect(killLeftovers(dir)).toEqual([ours.pid]);
    expect(await ours.exited).toMatchObject({ signal: 'SIGKILL' });
    expect(otherRun.alive).toBe(true);
    expect(unmarked.alive).toBe(true);
    expect(live.alive).toBe(true);
    expect(existsSync(join(runDir, 'pids.json'))).toBe(false);
    expect(killLeftovers(join(dir, 'missing'))).toEqual([]);
  });
});

/** Issue 50: what a fab process writes (its log, the store it creates) is its owner's alone. */
describe('ManagedProcess file modes', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'local-fab-modes-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates its log 0600 and runs the process with umask 077 (a file it creates is 0600); the launcher keeps its own umask', async () => {
    const before = process.umask();
    const log = join(dir, 'p.log');
    const created = join(dir, 'store.db');
    const p = ManagedProcess.spawn({ name: 'writer', role: 'defender', command: 'sh', args: ['-c', `echo started; touch '${created}'`], env: { PATH: process.env['PATH'] ?? '' }, logFile: log, port: 0 });
    expect(await p.exited).toMatchObject({ code: 0 });
    const mode = (f: string) => statSync(f).mode & 0o777;
    expect({ log: mode(log), created: mode(created), text: readFileSync(log, 'utf8') }).toEqual({ log: 0o600, created: 0o600, text: 'started\n' });
    expect(process.umask()).toBe(before);
  });
});
