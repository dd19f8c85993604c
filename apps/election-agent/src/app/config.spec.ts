import { join } from 'node:path';
import { ConfigValidationError, loadConfig } from '@defender/nest-common';
import { electionAgentEnvSchema, isLoopbackHost } from './config';

const readable = join(__dirname, 'config.ts');

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig('election-agent', electionAgentEnvSchema, env);
  } catch (err) {
    if (err instanceof ConfigValidationError)
      return err.problems.map((p) => `${p.variable}: ${p.message.replace(/; got .*$/, '')}`);
    throw err;
  }
  return [];
}

const TOKEN = 'aaaaaaaaaaaaaaaa';
const LOOPBACK = { GRPC_HOST: '127.0.0.1', ELECTION_AUTH_TOKEN: TOKEN };

describe('election-agent configuration', () => {
  it('has working defaults on loopback with a token: no TLS, bucket "elections", 500 ms skew margin', () => {
    expect(loadConfig('election-agent', electionAgentEnvSchema, LOOPBACK)).toMatchObject({
      GRPC_PORT: 9090,
      ELECTION_KV_BUCKET: 'elections',
      ELECTION_KV_HISTORY: 10,
      ELECTION_KV_REPLICAS: 1,
      ELECTION_CLOCK_SKEW_MS: 500,
    });
  });

  it('accepts several tokens (rotation) and a complete TLS setup', () => {
    const c = loadConfig('election-agent', electionAgentEnvSchema, {
      ELECTION_AUTH_TOKEN: 'aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbb',
      GRPC_TLS_CERT_FILE: readable,
      GRPC_TLS_KEY_FILE: readable,
      GRPC_TLS_CA_FILE: readable,
    });
    expect(c.GRPC_HOST).toBe('0.0.0.0');
    expect(c.ELECTION_AUTH_TOKEN).toEqual(['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbbbbbb']);
  });

  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['localhost', true],
    ['::1', true],
    ['[::1]', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['election-agent', false],
    ['128.0.0.1', false],
  ])('loopback(%s) = %s', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });

  it.each([
    // Not loopback (the default 0.0.0.0 included): refused without TLS and a token.
    [{}, ['GRPC_HOST: 0.0.0.0 is not a loopback address: serving gRPC there needs TLS (GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE) and a token (ELECTION_AUTH_TOKEN); set them, or bind GRPC_HOST=127.0.0.1 (unset: the default applies)']],
    [{ GRPC_HOST: '10.1.2.3', ELECTION_AUTH_TOKEN: TOKEN }, ['GRPC_HOST: 10.1.2.3 is not a loopback address: serving gRPC there needs TLS (GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE); set them, or bind GRPC_HOST=127.0.0.1']],
    [
      { GRPC_HOST: '0.0.0.0', GRPC_TLS_CERT_FILE: readable, GRPC_TLS_KEY_FILE: readable },
      ['GRPC_HOST: 0.0.0.0 is not a loopback address: serving gRPC there needs a token (ELECTION_AUTH_TOKEN); set them, or bind GRPC_HOST=127.0.0.1'],
    ],
    // An invalid token refuses the start by itself.
    [
      { GRPC_TLS_CERT_FILE: readable, GRPC_TLS_KEY_FILE: readable, ELECTION_AUTH_TOKEN: 'short' },
      ['ELECTION_AUTH_TOKEN: each token must be at least 16 characters (entry 0)'],
    ],
    [{ GRPC_HOST: '0.0.0.0', GRPC_TLS_CERT_FILE: readable, GRPC_TLS_KEY_FILE: readable, ELECTION_AUTH_TOKEN: TOKEN }, []],
    [{ GRPC_HOST: 'localhost', ELECTION_AUTH_TOKEN: TOKEN }, []],
    // Loopback needs a token too (issue 50), unless the development flag says otherwise, which only loopback may.
    [{ GRPC_HOST: 'localhost' }, ['ELECTION_AUTH_TOKEN: is required, also on loopback (any local process could campaign or resign); for development only, ELECTION_DEV_NO_AUTH=true serves a loopback address without one (unset: the default applies)']],
    [{ GRPC_HOST: '127.0.0.1', ELECTION_DEV_NO_AUTH: 'true' }, []],
    [{ GRPC_HOST: '0.0.0.0', GRPC_TLS_CERT_FILE: readable, GRPC_TLS_KEY_FILE: readable, ELECTION_AUTH_TOKEN: TOKEN, ELECTION_DEV_NO_AUTH: 'true' }, ['ELECTION_DEV_NO_AUTH: only a loopback GRPC_HOST may serve without a token (0.0.0.0 is not one)']],
  ])('non-loopback needs TLS and a token, loopback a token: %j', (env, expected) => {
    expect(problems(env).sort()).toEqual([...expected].sort());
  });

  it.each([
    [{ GRPC_TLS_CERT_FILE: readable }, ['GRPC_TLS_CERT_FILE: needs GRPC_TLS_KEY_FILE as well']],
    [{ GRPC_TLS_KEY_FILE: readable }, ['GRPC_TLS_KEY_FILE: needs GRPC_TLS_CERT_FILE as well']],
    [
      { GRPC_TLS_CA_FILE: readable },
      ['GRPC_TLS_CA_FILE: mutual TLS needs GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE'],
    ],
    // Reported together with other problems.
    [
      { GRPC_TLS_CA_FILE: readable, ELECTION_CLOCK_SKEW_MS: '-1' },
      [
        'ELECTION_CLOCK_SKEW_MS: must be >= 0',
        'GRPC_TLS_CA_FILE: mutual TLS needs GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE',
      ],
    ],
    [
      { GRPC_TLS_CERT_FILE: '/nonexistent.pem', GRPC_TLS_KEY_FILE: readable },
      ['GRPC_TLS_CERT_FILE: must be a readable file (missing, not a file, or no permission)'],
    ],
    [
      { ELECTION_AUTH_TOKEN: 'aaaaaaaaaaaaaaaa,short' },
      ['ELECTION_AUTH_TOKEN: each token must be at least 16 characters (entry 1)'],
    ],
    [
      { ELECTION_KV_REPLICAS: '7', ELECTION_KV_HISTORY: '0' },
      ['ELECTION_KV_HISTORY: must be >= 1', 'ELECTION_KV_REPLICAS: must be <= 5'],
    ],
  ])('%j', (env, expected) => {
    expect(problems({ ...LOOPBACK, ...env }).sort()).toEqual([...expected].sort());
  });
});
