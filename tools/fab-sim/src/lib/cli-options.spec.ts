import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseCli, UsageError } from './cli-options';

const REPO = join(__dirname, '..', '..', '..', '..');

describe('fab-sim command line', () => {
  it('options, and connection defaults from the environment', () => {
    expect(
      parseCli(['run', '--runs', '30', '--speed', 'max', '--no-seed'], {
        NATS_SERVERS: 'nats://a:1,nats://b:2',
        STORE_BACKEND: 'cassandra',
      }),
    ).toMatchObject({
      command: 'run',
      runs: 30,
      speed: 'max',
      writeMetadata: false,
      nats: ['nats://a:1', 'nats://b:2'],
      store: 'cassandra',
    });
    expect(parseCli(['describe', '--tools', '3', '--json'], {})).toMatchObject({
      command: 'describe',
      tools: 3,
      json: true,
      store: 'sqlite',
    });
  });

  it.each([[['--help']], [['-h']], [['run', '--help']]])(
    '%j asks for help (a UsageError without a message)',
    (argv) => {
      expect(() => parseCli(argv, {})).toThrow(new UsageError(''));
    },
  );

  it.each([
    [['run', '--speedy', '3'], /Unknown option '--speedy'/],
    [['run', '--runs'], /argument missing/],
    [['run', '--runs', '0'], /--runs must be an integer in 1\.\./],
    [[], /a command is required/],
    [['replay'], /unknown command "replay"/],
    [['run', 'now'], /unexpected argument "now"/],
  ])('%j is a usage error', (argv, message) => {
    expect(() => parseCli(argv, {})).toThrow(UsageError);
    expect(() => parseCli(argv, {})).toThrow(message);
  });

  // The process: --help connects to nothing and writes nothing.
  const run = (...args: string[]) =>
    spawnSync(join(REPO, 'tools/fab-sim/fab-sim'), args, {
      cwd: REPO,
      env: { PATH: process.env['PATH'] ?? '' },
      encoding: 'utf8',
      timeout: 60_000,
    });

  it.each([[['--help']], [['-h']], [['run', '--help']]])(
    'the process: %j prints usage and exits 0',
    (args) => {
      const r = run(...args);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^Usage: fab-sim/);
      expect(r.stderr).toBe('');
    },
  );

  it('the process: an unknown option exits 2 with the message and the usage', () => {
    const r = run('run', '--speedy', '3');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/Unknown option '--speedy'[\s\S]*Usage: fab-sim/);
  });
});
