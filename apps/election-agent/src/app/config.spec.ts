import { join } from 'node:path';
import { ConfigValidationError, loadConfig } from '@defender/nest-common';
import { electionAgentEnvSchema } from './config';

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

describe('election-agent configuration', () => {
  it('has working defaults: no TLS, no token, bucket "elections", 500 ms skew margin', () => {
    expect(loadConfig('election-agent', electionAgentEnvSchema, {})).toMatchObject({
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
    expect(c.ELECTION_AUTH_TOKEN).toEqual(['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbbbbbb']);
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
      ['GRPC_TLS_CERT_FILE: must be a readable file'],
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
    expect(problems(env).sort()).toEqual([...expected].sort());
  });
});
