import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseCommandLine, UsageError } from './cassandra';

const REPO = join(__dirname, '..', '..', '..');

describe('cassandra.ts command line', () => {
  it.each([
    [['fetch'], { command: 'fetch' }],
    [['fetch', '--version', '5.0.8'], { command: 'fetch', version: '5.0.8' }],
    [['start', '--heap-mb', '768', '--version=5.0.9'], { command: 'start', version: '5.0.9', heapMb: 768 }],
    [['--help'], { command: 'help' }],
    [['start', '-h'], { command: 'help' }],
  ])('%j', (argv, expected) => {
    expect(parseCommandLine(argv)).toEqual(expected);
  });

  it.each([
    [[], /a command is required/],
    [['stop'], /unknown command "stop"/],
    [['start', 'now'], /unexpected argument "now"/],
    [['start', '--heap', '512'], /Unknown option '--heap'/],
    [['start', '--version'], /argument missing/],
    [['start', '--heap-mb', 'lots'], /--heap-mb must be an integer >= 256/],
    [['fetch', '--heap-mb', '512'], /start only/],
  ])('%j is a usage error', (argv, message) => {
    expect(() => parseCommandLine(argv)).toThrow(UsageError);
    expect(() => parseCommandLine(argv)).toThrow(message);
  });

  const run = (...args: string[]) =>
    spawnSync(
      process.execPath,
      ['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, 'tools/infra/bin/cassandra.ts'), ...args],
      { cwd: REPO, encoding: 'utf8', timeout: 60_000 },
    );

  it.each([[['--help']], [['-h']], [['start', '--help']]])(
    'the process: %j prints usage and exits 0 without starting anything',
    (args) => {
      const r = run(...args);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^Usage: cassandra\.ts <fetch\|start>/);
      expect(r.stderr).toBe('');
    },
  );

  it('the process: an unknown option exits 2 with the message and the usage', () => {
    const r = run('start', '--heap', '512');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/Unknown option '--heap'/);
    expect(r.stderr).toContain('Usage: cassandra.ts');
  });
});
