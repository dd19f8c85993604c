import { z } from 'zod';
import { ConfigProblem, ConfigValidationError } from './config-error';

/** Exit code for a process that refuses to start because its configuration is invalid. */
export const EXIT_CODE_BAD_CONFIG = 2;

const SECRET_KEY = /PASSWORD|TOKEN|SECRET|CREDENTIAL|PRIVATE/i;

/**
 * Validates `env` against `schema` (an object of UPPER_SNAKE keys) and returns the typed config.
 * Unknown variables are ignored; empty strings count as unset so `FOO=` falls back to the default.
 *
 * @throws ConfigValidationError listing every problem found.
 */
export function loadConfig<S extends z.ZodObject<z.ZodRawShape>>(
  appName: string,
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const raw = env[key];
    if (raw !== undefined && raw.trim() !== '') input[key] = raw.trim();
  }
  const result = schema.safeParse(input);
  const pairs = credentialProblems(input, new Set(Object.keys(schema.shape)));
  if (result.success && pairs.length === 0) return result.data;
  const problems: ConfigProblem[] = (result.success ? [] : result.error.issues).map((issue) => {
    const [key, ...rest] = issue.path.map(String);
    if (key === undefined) return { variable: '(environment)', message: issue.message };
    if (!(key in input)) {
      // Unset: either required, or a rule across variables that the default breaks.
      return { variable: key, message: issue.code === 'invalid_type' ? 'is required' : `${issue.message} (unset: the default applies)` };
    }
    const where = rest.length > 0 ? ` (entry ${rest.join('.')})` : '';
    const shown = SECRET_KEY.test(key) ? '(value hidden)' : JSON.stringify(input[key]);
    return { variable: key, message: `${issue.message}${where}; got ${shown}` };
  });
  throw new ConfigValidationError(appName, [...problems, ...pairs]);
}

/**
 * Credentials that only work as a pair: one without the other is a mistake, never a silent "no
 * auth" (a client certificate without its key, or the reverse, is one too).
 */
const CREDENTIAL_PAIRS: readonly (readonly [string, string])[] = [
  ['CASSANDRA_USERNAME', 'CASSANDRA_PASSWORD'],
  ['NATS_USER', 'NATS_PASSWORD'],
  ['NATS_TLS_CERT_FILE', 'NATS_TLS_KEY_FILE'],
  ['CASSANDRA_TLS_CERT_FILE', 'CASSANDRA_TLS_KEY_FILE'],
];

/** `[variable, what it needs]`: a setting that means nothing without another (TLS is on only with its CA). */
const NEEDS: readonly (readonly [string, string, string])[] = [
  ['CASSANDRA_TLS_CERT_FILE', 'CASSANDRA_TLS_CA_FILE', 'a client certificate is sent only over TLS, which CASSANDRA_TLS_CA_FILE turns on'],
  ['CASSANDRA_TLS_SERVER_NAME', 'CASSANDRA_TLS_CA_FILE', 'the name is checked only over TLS, which CASSANDRA_TLS_CA_FILE turns on'],
];

/**
 * Half-set credentials (a user without its password, a certificate without its key, or the
 * reverse; TLS settings without the CA that turns TLS on) and NATS_TOKEN beside
 * NATS_USER: each a problem naming the variable to fix (fail closed; a half-set pair used to be
 * dropped, connecting without authentication).
 */
export function credentialProblems(input: Readonly<Record<string, string>>, known: ReadonlySet<string>): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const set = (k: string) => input[k] !== undefined;
  for (const [user, secret] of CREDENTIAL_PAIRS) {
    if (!known.has(user) || !known.has(secret)) continue;
    if (set(user) && !set(secret)) problems.push({ variable: secret, message: `is required when ${user} is set (set both, or neither)` });
    if (set(secret) && !set(user)) problems.push({ variable: user, message: `is required when ${secret} is set (set both, or neither)` });
  }
  for (const [variable, needed, why] of NEEDS) {
    if (known.has(variable) && known.has(needed) && set(variable) && !set(needed)) problems.push({ variable: needed, message: `is required when ${variable} is set (${why})` });
  }
  if (known.has('NATS_TOKEN') && set('NATS_TOKEN') && (set('NATS_USER') || set('NATS_PASSWORD'))) {
    problems.push({ variable: 'NATS_TOKEN', message: 'and NATS_USER / NATS_PASSWORD are two ways to authenticate to NATS: set one of them' });
  }
  return problems;
}

/** Where {@link loadConfigOrExit} reports and how it exits; injectable for tests. */
export interface ExitHooks {
  write(line: string): void;
  exit(code: number): never;
}

const processExitHooks: ExitHooks = {
  write: (line) => process.stderr.write(line + '\n'),
  exit: (code) => process.exit(code),
};

/**
 * For `main.ts`: loads the config, or prints every problem as one JSON log line plus a readable
 * block on stderr and exits with {@link EXIT_CODE_BAD_CONFIG} before Nest starts.
 */
export function loadConfigOrExit<S extends z.ZodObject<z.ZodRawShape>>(
  appName: string,
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
  hooks: ExitHooks = processExitHooks,
): z.infer<S> {
  try {
    return loadConfig(appName, schema, env);
  } catch (err) {
    if (!(err instanceof ConfigValidationError)) throw err;
    hooks.write(
      JSON.stringify({
        level: 'fatal',
        time: new Date().toISOString(),
        app: appName,
        msg: 'invalid configuration',
        problems: err.problems,
      }),
    );
    hooks.write(err.message);
    return hooks.exit(EXIT_CODE_BAD_CONFIG);
  }
}
