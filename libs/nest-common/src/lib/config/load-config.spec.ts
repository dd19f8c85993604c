import { z } from 'zod';
import { commonEnvShape } from './common-env';
import { ConfigValidationError } from './config-error';
import { env } from './env-fields';
import { EXIT_CODE_BAD_CONFIG, loadConfig, loadConfigOrExit } from './load-config';
import { storeEnvShape } from '../store/store-env';

const schema = z.object({
  ...commonEnvShape(8080),
  MAX_DEFENDERS: env.int(100, 1, 10_000),
  HEARTBEAT_INTERVAL_SECONDS: env.seconds(2, 0.1, 60),
  CACHE_ENABLED: env.bool(true),
  NATS_KV_BUCKET: env.natsName('defender-assignments'),
});

function problemsOf(e: NodeJS.ProcessEnv, s: z.ZodObject<z.ZodRawShape> = schema): Record<string, string> {
  try {
    loadConfig('test-app', s, e);
  } catch (err) {
    if (!(err instanceof ConfigValidationError)) throw err;
    return Object.fromEntries(err.problems.map((p) => [p.variable, p.message]));
  }
  return {};
}

describe('loadConfig', () => {
  it('applies every default for an empty environment', () => {
    expect(loadConfig('test-app', schema, {})).toEqual({
      LOG_LEVEL: 'info',
      HTTP_HOST: '0.0.0.0',
      HTTP_PORT: 8080,
      NATS_SERVERS: ['nats://127.0.0.1:4222'],
      MAX_DEFENDERS: 100,
      HEARTBEAT_INTERVAL_SECONDS: 2,
      CACHE_ENABLED: true,
      NATS_KV_BUCKET: 'defender-assignments',
    });
  });

  it('parses and coerces set values, trimming whitespace and treating empty strings as unset', () => {
    const cfg = loadConfig('test-app', schema, {
      HTTP_PORT: ' 9000 ',
      NATS_SERVERS: 'nats://n1:4222, nats://n2:4222 ,n3:4222',
      MAX_DEFENDERS: '30',
      HEARTBEAT_INTERVAL_SECONDS: '0.5',
      CACHE_ENABLED: 'no',
      LOG_LEVEL: '',
      UNRELATED: 'ignored',
    });
    expect(cfg).toMatchObject({
      HTTP_PORT: 9000,
      NATS_SERVERS: ['nats://n1:4222', 'nats://n2:4222', 'n3:4222'],
      MAX_DEFENDERS: 30,
      HEARTBEAT_INTERVAL_SECONDS: 0.5,
      CACHE_ENABLED: false,
      LOG_LEVEL: 'info',
    });
  });

  it.each([
    ['HTTP_PORT', '65536', /<= 65535/],
    ['HTTP_PORT', 'http', /port number/],
    ['MAX_DEFENDERS', '2.5', /integer/],
    ['MAX_DEFENDERS', '0', />= 1/],
    ['HEARTBEAT_INTERVAL_SECONDS', '120', /<= 60 s/],
    ['CACHE_ENABLED', 'maybe', /true or false/],
    ['NATS_SERVERS', 'nats://ok:4222,has space:1', /nats:\/\/host:port \(entry 1\)/],
    ['NATS_KV_BUCKET', 'a.b', /letters, digits/],
    ['LOG_LEVEL', 'chatty', /one of fatal/],
  ])('rejects %s=%s with a message naming the expected form', (key, value, message) => {
    const problems = problemsOf({ [key]: value });
    expect(Object.keys(problems)).toEqual([key]);
    expect(problems[key]).toMatch(message);
    expect(problems[key]).toContain(JSON.stringify(value));
  });

  it('reports every problem at once', () => {
    const problems = problemsOf({ HTTP_PORT: '-1', MAX_DEFENDERS: 'many', LOG_LEVEL: 'x', CACHE_ENABLED: '2' });
    expect(Object.keys(problems).sort()).toEqual(['CACHE_ENABLED', 'HTTP_PORT', 'LOG_LEVEL', 'MAX_DEFENDERS']);
  });

  it('names missing required variables and never echoes secrets', () => {
    const withSecret = z.object({ API_URL: z.string().url(), NATS_PASSWORD: z.string().min(12) });
    try {
      loadConfig('test-app', withSecret, { NATS_PASSWORD: 'hunter2' });
      throw new Error('expected a ConfigValidationError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigValidationError);
      const e = err as ConfigValidationError;
      expect(e.problems).toEqual([
        { variable: 'API_URL', message: 'is required' },
        { variable: 'NATS_PASSWORD', message: expect.stringContaining('(value hidden)') },
      ]);
      expect(e.message).not.toContain('hunter2');
    }
  });
});

describe('half-set credentials fail closed', () => {
  const withStore = z.object({ ...commonEnvShape(8080), CASSANDRA_USERNAME: env.optionalString(), CASSANDRA_PASSWORD: env.optionalString() });
  const problems = (e: NodeJS.ProcessEnv) => problemsOf(e, withStore);

  it('a user without its password, or a password without its user, names the missing one', () => {
    expect(problems({ CASSANDRA_USERNAME: 'defender' })).toEqual({ CASSANDRA_PASSWORD: 'is required when CASSANDRA_USERNAME is set (set both, or neither)' });
    expect(problems({ CASSANDRA_PASSWORD: 'secret-1' })).toEqual({ CASSANDRA_USERNAME: 'is required when CASSANDRA_PASSWORD is set (set both, or neither)' });
    expect(problems({ NATS_USER: 'defender' })).toEqual({ NATS_PASSWORD: 'is required when NATS_USER is set (set both, or neither)' });
  });

  it('a token beside a user is ambiguous; both or neither of a pair is fine; reported with the other problems', () => {
    expect(problems({ NATS_TOKEN: 't0ken', NATS_USER: 'u', NATS_PASSWORD: 'p' })).toEqual({ NATS_TOKEN: expect.stringContaining('set one of them') });
    expect(problems({ NATS_USER: 'u', NATS_PASSWORD: 'p', CASSANDRA_USERNAME: 'c', CASSANDRA_PASSWORD: 'd' })).toEqual({});
    expect(problems({})).toEqual({});
    expect(Object.keys(problems({ HTTP_PORT: 'x', CASSANDRA_USERNAME: 'c' })).sort()).toEqual(['CASSANDRA_PASSWORD', 'HTTP_PORT']);
  });
});

describe('TLS files fail closed', () => {
  const withStore = z.object({ ...commonEnvShape(8080), ...storeEnvShape() });
  const problems = (e: NodeJS.ProcessEnv) => problemsOf(e, withStore);
  const file = __filename;

  it('a client certificate without its key (or the reverse) names the missing one', () => {
    expect(problems({ NATS_TLS_CERT_FILE: file })).toEqual({ NATS_TLS_KEY_FILE: 'is required when NATS_TLS_CERT_FILE is set (set both, or neither)' });
    expect(problems({ NATS_TLS_KEY_FILE: file })).toEqual({ NATS_TLS_CERT_FILE: 'is required when NATS_TLS_KEY_FILE is set (set both, or neither)' });
    expect(problems({ CASSANDRA_TLS_CA_FILE: file, CASSANDRA_TLS_CERT_FILE: file })).toEqual({
      CASSANDRA_TLS_KEY_FILE: 'is required when CASSANDRA_TLS_CERT_FILE is set (set both, or neither)',
    });
  });

  it('Cassandra TLS settings without the CA that turns TLS on are an error', () => {
    expect(problems({ CASSANDRA_TLS_CERT_FILE: file, CASSANDRA_TLS_KEY_FILE: file })).toEqual({ CASSANDRA_TLS_CA_FILE: expect.stringContaining('is required when CASSANDRA_TLS_CERT_FILE is set') });
    expect(problems({ CASSANDRA_TLS_SERVER_NAME: 'cassandra.example.com' })).toEqual({ CASSANDRA_TLS_CA_FILE: expect.stringContaining('is required when CASSANDRA_TLS_SERVER_NAME is set') });
    expect(problems({ CASSANDRA_TLS_CA_FILE: file, CASSANDRA_TLS_SERVER_NAME: 'not a name' })).toEqual({ CASSANDRA_TLS_SERVER_NAME: expect.stringContaining('must be a host name') });
  });

  it('an unreadable file is named with the reason, never its contents', () => {
    expect(problems({ NATS_TLS_CA_FILE: '/nonexistent/ca.crt', CASSANDRA_TLS_CA_FILE: '/' })).toEqual({
      NATS_TLS_CA_FILE: 'must be a readable file (missing, not a file, or no permission); got "/nonexistent/ca.crt"',
      CASSANDRA_TLS_CA_FILE: 'must be a readable file (missing, not a file, or no permission); got "/"',
    });
  });

  it('complete settings load: CA alone, CA with a client certificate and key', () => {
    expect(problems({ NATS_TLS_CA_FILE: file })).toEqual({});
    expect(problems({ NATS_TLS_CA_FILE: file, NATS_TLS_CERT_FILE: file, NATS_TLS_KEY_FILE: file })).toEqual({});
    expect(
      problems({ CASSANDRA_TLS_CA_FILE: file, CASSANDRA_TLS_CERT_FILE: file, CASSANDRA_TLS_KEY_FILE: file, CASSANDRA_TLS_SERVER_NAME: 'cassandra.db.svc.cluster.local' }),
    ).toEqual({});
  });
});

describe('loadConfigOrExit', () => {
  it('writes a JSON report and a readable block, then exits with code 2', () => {
    const lines: string[] = [];
    class Exit extends Error {
      constructor(readonly code: number) {
        super(`exit ${code}`);
      }
    }
    const hooks = {
      write: (l: string) => lines.push(l),
      exit: (code: number): never => {
        throw new Exit(code);
      },
    };
    expect(() => loadConfigOrExit('test-app', schema, { HTTP_PORT: 'x', MAX_DEFENDERS: '-3' }, hooks)).toThrow(
      new Exit(EXIT_CODE_BAD_CONFIG),
    );
    const json = JSON.parse(lines[0] ?? '{}') as { level: string; msg: string; problems: { variable: string }[] };
    expect(json.level).toBe('fatal');
    expect(json.msg).toBe('invalid configuration');
    expect(json.problems.map((p) => p.variable).sort()).toEqual(['HTTP_PORT', 'MAX_DEFENDERS']);
    expect(lines[1]).toMatch(/^test-app: invalid configuration \(2 problems\):\n {2}- /);
  });

  it('returns the config when it is valid', () => {
    const hooks = { write: jest.fn(), exit: jest.fn() as unknown as (code: number) => never };
    expect(loadConfigOrExit('test-app', schema, { HTTP_PORT: '1234' }, hooks).HTTP_PORT).toBe(1234);
    expect(hooks.write).not.toHaveBeenCalled();
  });
});
