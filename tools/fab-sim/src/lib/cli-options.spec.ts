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

  it('NATS credentials come from the environment, both or neither', () => {
    expect(parseCli(['run'], { NATS_USER: 'publisher', NATS_PASSWORD: 'publisher-secret-1' }).natsCredentials).toEqual({ user: 'publisher', pass: 'publisher-secret-1' });
    expect(parseCli(['run'], {}).natsCredentials).toBeUndefined();
    expect(() => parseCli(['run'], { NATS_USER: 'publisher' })).toThrow(new UsageError('NATS_USER and NATS_PASSWORD go together: NATS_PASSWORD is not set'));
  });

  it('NATS TLS files come from the environment, a client certificate with its key', () => {
    expect(parseCli(['run'], { NATS_TLS_CA_FILE: '/tls/ca.crt' }).natsTls).toEqual({ caFile: '/tls/ca.crt' });
    expect(parseCli(['run'], { NATS_TLS_CA_FILE: '/tls/ca.crt', NATS_TLS_CERT_FILE: '/tls/c.crt', NATS_TLS_KEY_FILE: '/tls/c.key' }).natsTls).toEqual({
      caFile: '/tls/ca.crt',
      certFile: '/tls/c.crt',
      keyFile: '/tls/c.key',
    });
    expect(parseCli(['run'], {}).natsTls).toBeUndefined();
    expect(() => parseCli(['run'], { NATS_TLS_CERT_FILE: '/tls/c.crt' })).toThrow(new UsageError('NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE go together: NATS_TLS_KEY_FILE is not set'));
  });

  it('Cassandra TLS comes from the environment; a half pair, or settings without the CA, is a usage error', () => {
    expect(parseCli(['run'], { CASSANDRA_TLS_CA_FILE: '/tls/ca.crt', CASSANDRA_TLS_SERVER_NAME: 'db.example' }).cassandraTls).toEqual({ caFile: '/tls/ca.crt', serverName: 'db.example' });
    expect(parseCli(['run'], {}).cassandraTls).toBeUndefined();
    expect(() => parseCli(['run'], { CASSANDRA_TLS_CA_FILE: '/tls/ca.crt', CASSANDRA_TLS_CERT_FILE: '/c.crt' })).toThrow(
      new UsageError('CASSANDRA_TLS_CERT_FILE and CASSANDRA_TLS_KEY_FILE go together: CASSANDRA_TLS_KEY_FILE is not set'),
    );
    expect(() => parseCli(['run'], { CASSANDRA_TLS_SERVER_NAME: 'db.example' })).toThrow(/CASSANDRA_TLS_CA_FILE is required/);
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
