import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseCommandLine, UsageError } from './cli';
import { DEFAULT_SOAK } from './lib/soak';
import { SUITES } from './lib/suites';

const REPO = join(__dirname, '..', '..', '..');
const names = SUITES.map((d) => d.name);

describe('chaos command line', () => {
  it.each([
    [['soak'], {}, { command: 'soak', seconds: DEFAULT_SOAK.seconds, seed: DEFAULT_SOAK.seed }],
    [['soak'], { CHAOS_SOAK_SECONDS: '30' }, { command: 'soak', seconds: 30, seed: DEFAULT_SOAK.seed }],
    [
      ['soak', '--seconds', '5', '--seed', '9'],
      { CHAOS_SOAK_SECONDS: '30' },
      { command: 'soak', seconds: 5, seed: 9 },
    ],
    [['suite'], {}, { command: 'suite', suites: names, defaults: false }],
    [['suite', 'all', '--defaults'], {}, { command: 'suite', suites: names, defaults: true }],
    [['suite', names[0]!], {}, { command: 'suite', suites: [names[0]], defaults: false }],
    [
      ['suite', 'membership', '--chambers', '20000', '--scenarios', 'crash-single,planned-scale-up'],
      {},
      { command: 'suite', suites: ['membership'], defaults: false, chambers: 20000, scenarios: ['crash-single', 'planned-scale-up'] },
    ],
    [['render'], {}, { command: 'render' }],
    [['--help'], {}, { command: 'help', exitCode: 0 }],
    [['soak', '-h'], {}, { command: 'help', exitCode: 0 }],
    [[], {}, { command: 'help', exitCode: 2 }],
  ])('%j (env %j)', (argv, env, expected) => {
    expect(parseCommandLine(argv, env)).toEqual(expected);
  });

  it.each([
    [['soak', '--minutes', '5'], /Unknown option '--minutes'/],
    [['soak', '--seconds'], /argument missing/],
    [['soak', '--seconds', '0'], /--seconds must be > 0/],
    [['soak', 'now'], /soak takes no arguments/],
    [['soak', '--defaults'], /apply to suite only/],
    [['soak', '--chambers', '100'], /apply to suite only/],
    [['suite', 'membership', '--chambers', '7'], /--chambers must be an integer from 8 to 50000/],
    [['suite', 'membership', '--chambers', '1e9'], /--chambers must be/],
    [['suite', 'membership', '--scenarios', 'crash-single,nats-node-frozen'], /no scenario nats-node-frozen in membership/],
    [['suite', 'membership', '--scenarios', ','], /no scenario \(none given\)/],
    [['render', '--chambers', '9'], /render takes no options/],
    [['suite', 'nope'], /unknown suite nope/],
    [['suite', 'all', '--seed', '3'], /apply to soak only/],
    [['suite', 'all', 'more'], /suite takes one suite/],
    [['run'], /unknown command run/],
    [['render', 'crash-single'], /render takes no arguments/],
    [['render', '--defaults'], /render takes no options/],
  ])('%j is a usage error', (argv, message) => {
    expect(() => parseCommandLine(argv, {})).toThrow(UsageError);
    expect(() => parseCommandLine(argv, {})).toThrow(message);
  });

  // The process: --help neither builds a cluster nor writes a report.
  const run = (...args: string[]) =>
    spawnSync(
      process.execPath,
      ['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, 'tools/chaos/src/cli.ts'), ...args],
      { cwd: REPO, encoding: 'utf8', timeout: 60_000 },
    );

  it.each([[['--help']], [['-h']], [['soak', '--help']]])(
    'the process: %j prints usage and exits 0',
    (args) => {
      const r = run(...args);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^Usage: npm run chaos/);
      expect(r.stderr).toBe('');
    },
  );

  it('the process: an unknown option exits 2 with the message and the usage', () => {
    const r = run('soak', '--minutes', '5');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/Unknown option '--minutes'[\s\S]*Usage: npm run chaos/);
  });
});
