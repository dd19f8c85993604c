import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseCommandLine, UsageError } from './arl';

const REPO = join(__dirname, '..', '..');

describe('arl command line', () => {
  it('defaults write the docs section; any custom choice does not', () => {
    expect(parseCommandLine([])).toMatchObject({
      reps: 4000,
      refReps: 20000,
      chamberReps: 200,
      seed: 20240611,
      write: true,
      presets: [],
      strategies: [],
    });
    expect(parseCommandLine(['--reps', '10', '--seed', '7'])).toMatchObject({
      reps: 10,
      seed: 7,
      write: true,
    });
    expect(parseCommandLine(['--no-write'])).toMatchObject({ write: false });
    expect(parseCommandLine(['--shifts', '0,1.5', '--charts', '2'])).toMatchObject({
      shifts: [0, 1.5],
      charts: [2],
      write: false,
    });
    expect(parseCommandLine(['--strategy', 'a.json', '--strategy', 'b.json'])).toMatchObject({
      strategies: ['a.json', 'b.json'],
      write: false,
    });
  });

  it.each([[['--help']], [['-h']], [['--reps', '10', '--help']]])('%j is help', (argv) => {
    expect(parseCommandLine(argv)).toBe('help');
  });

  it.each([
    [['--bogus'], /Unknown option '--bogus'/],
    [['run'], /Unexpected argument 'run'/],
    [['--reps'], /argument missing/],
    [['--reps', '0'], UsageError],
    [['--charts', '0'], UsageError],
    [['--preset', 'no such preset'], /unknown preset no such preset/],
  ])('%j is an error', (argv, expected) => {
    expect(() => parseCommandLine(argv)).toThrow(expected);
  });

  // The process: --help must not simulate (a minute and more) nor rewrite docs/benchmarks.md.
  const run = (...args: string[]) =>
    spawnSync(
      process.execPath,
      ['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, 'tools/arl/arl.ts'), ...args],
      { cwd: REPO, encoding: 'utf8', timeout: 60_000 },
    );

  it.each([['--help'], ['-h']])('the process: %s prints usage and exits 0', (flag) => {
    const r = run(flag);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: npm run arl/);
    expect(r.stderr).toBe('');
  });

  it('the process: an unknown option exits 2 with the message and the usage', () => {
    const r = run('--bogus');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/Unknown option '--bogus'[\s\S]*Usage: npm run arl/);
    expect(r.stdout).toBe('');
  });
});
