import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { benchArgs, envInt } from './cli';

const REPO = join(__dirname, '..', '..');
const BENCHES = readdirSync(__dirname)
  .filter((f) => f.endsWith('.bench.ts'))
  .sort();
/** The scripts run from the command line: every bench, `npm run bench` and the heap snapshot summary. */
const SCRIPTS = [...BENCHES, 'run-all.ts', 'heap-summary.ts'];
/** Those whose only option is --help (parameters from the environment); detection.bench.ts has its own. */
const HELP_ONLY = SCRIPTS.filter((f) => f !== 'detection.bench.ts' && f !== 'heap-summary.ts');

const run = (script: string, ...args: string[]) =>
  spawnSync(
    process.execPath,
    ['-r', join(REPO, 'tools/scripts/register.js'), join(__dirname, script), ...args],
    {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 120_000,
      // A bench that ignored --help would run for minutes: the timeout ends it, and the test fails.
      killSignal: 'SIGKILL',
    },
  );

describe('envInt', () => {
  it('reads an integer parameter, the fallback when unset or empty, and refuses anything else by name', () => {
    expect(envInt('N', 7, 1, {})).toBe(7);
    expect(envInt('N', 7, 1, { N: '' })).toBe(7);
    expect(envInt('N', 7, 1, { N: '12' })).toBe(12);
    expect(() => envInt('N', 7, 1, { N: '0' })).toThrow('N must be an integer >= 1, got 0');
    expect(() => envInt('N', 7, 0, { N: '1.5' })).toThrow('N must be an integer >= 0, got 1.5');
    expect(() => envInt('N', 7, 0, { N: 'x' })).toThrow('N must be an integer >= 0, got x');
  });
});

describe('bench command lines', () => {
  it('take -h/--help and nothing else', () => {
    expect(benchArgs([])).toBe('run');
    expect(benchArgs(['--help'])).toBe('help');
    expect(benchArgs(['-h'])).toBe('help');
    expect(() => benchArgs(['--quick'])).toThrow(/Unknown option '--quick'/);
    expect(() => benchArgs(['sqlite'])).toThrow(/Unexpected argument 'sqlite'/);
  });

  it.each(SCRIPTS)('%s --help prints usage and exits 0 without running', (script) => {
    const r = run(script, '--help');
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: /);
  });

  it.each(HELP_ONLY)('%s with an unknown option exits 2 with the message and the usage', (script) => {
    const r = run(script, '--bogus');
    expect(r.signal).toBeNull();
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/Unknown option '--bogus'[\s\S]*Usage: /);
  });

  it('heap-summary.ts without a snapshot file exits 2 with the usage', () => {
    const r = run('heap-summary.ts');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/a heap snapshot file is required[\s\S]*Usage: /);
  });
});
