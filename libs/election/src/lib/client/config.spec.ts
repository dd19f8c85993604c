import { z } from 'zod';
import { agentAddressesSchema, electionClientEnvShape, electionClientOptionsFromEnv } from './config';

describe('ELECTION_AGENT_ADDR', () => {
  it.each([
    ['election-agent:9090', ['election-agent:9090']],
    [' a:1, b:2 ,[::1]:3,', ['a:1', 'b:2', '[::1]:3']],
    ['dns:///agents.ns.svc:9090', ['dns:///agents.ns.svc:9090']],
  ])('accepts %j', (raw, expected) => {
    expect(agentAddressesSchema.parse(raw)).toEqual(expected);
  });

  it.each([[''], ['no-port'], ['a:1,http://b:2'], [' , ']])('rejects %j', (raw) => {
    expect(agentAddressesSchema.safeParse(raw).success).toBe(false);
  });
});

describe('electionClientEnvShape', () => {
  const schema = z.object(electionClientEnvShape());

  it('defaults to one agent and TTL 4 s (ADR 0003: failover p99 within 6 s)', () => {
    expect(schema.parse({})).toEqual({
      ELECTION_AGENT_ADDR: ['election-agent:9090'],
      ELECTION_TTL_SECONDS: 4,
    });
  });

  it('builds client options; TLS only when a CA or client certificate is configured', () => {
    const env = schema.parse({
      ELECTION_AGENT_ADDR: 'a:1,b:2',
      ELECTION_TTL_SECONDS: '4',
      ELECTION_AUTH_TOKEN: 'secret-token-123456',
    });
    expect(electionClientOptionsFromEnv(env)).toEqual({
      addresses: ['a:1', 'b:2'],
      authToken: 'secret-token-123456',
      tls: undefined,
    });
    expect(() => electionClientOptionsFromEnv({ ...env, ELECTION_TLS_CERT_FILE: '/x' })).toThrow(
      /go together/,
    );
  });
});
