import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerHandle, NatsServerOptions, startNatsServer } from './nats';
import { makeTestPki, removeTestPki, TestPki } from './tls';

/** User and password of one NATS connection. */
export interface NatsCredentials {
  readonly user: string;
  readonly pass: string;
}

/** The users of a test nats-server and the `authorization` block that defines them. */
export interface TestNatsUsers {
  /** The `authorization { users: [...] }` block, passwords written in (keep the file private). */
  readonly config: string;
  /** The fixture's user: no permissions block, so unrestricted (an operator's; sets up and inspects). */
  readonly fixture: NatsCredentials;
  /** Each user of the given block by name (the role users: user name = role), with its fresh password. */
  readonly users: Readonly<Record<string, NatsCredentials>>;
}

/** User name of the harness's unrestricted fixture user. */
export const TEST_NATS_FIXTURE_USER = 'test-fixture';

/** Which NATS role (libs/nats-kv permissions.ts `NATS_ROLES`, the user names of deploy/nats/auth.conf) each app runs as. */
export const APP_NATS_ROLES: Readonly<Record<string, string>> = {
  defender: 'defender',
  'assignment-controller': 'controller',
  'election-agent': 'election-agent',
  dashboard: 'dashboard',
};

/** The NATS role `app` runs as (throws for an unknown app). */
export function natsRoleOfApp(app: string): string {
  const role = APP_NATS_ROLES[app];
  if (role === undefined) throw new Error(`no NATS role for app ${JSON.stringify(app)} (known: ${Object.keys(APP_NATS_ROLES).join(', ')})`);
  return role;
}

/**
 * The environment variable the deployments read `role`'s NATS password from (deploy/nats/auth.conf):
 * the `passwordEnv` to give libs/nats-kv `natsAuthorizationConfig` for a {@link testNatsUsers} block.
 */
export function natsPasswordEnvOf(role: string): string {
  return `NATS_${role.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_PASSWORD`;
}

const randomPassword = () => randomBytes(18).toString('base64url');
/** `user: "<name>"` followed by `password: $<ENV>` (libs/nats-kv natsAuthorizationConfig with `passwordEnv`). */
const USER_WITH_ENV_PASSWORD = /user: "([A-Za-z0-9._-]+)"(\s+)password: \$([A-Z_][A-Z0-9_]*)/g;

/**
 * Test users for an `authorization` block whose passwords are environment references
 * (`password: $NATS_DEFENDER_PASSWORD`, as deploy/nats/auth.conf and libs/nats-kv
 * `natsAuthorizationConfig` with `passwordEnv` write them): each gets a fresh random password written
 * in, and an unrestricted fixture user is added to the same list.
 * @throws Error when the block has no such user, a password that is not a reference, or no `users: [ ... ] }` end.
 */
export function testNatsUsers(authorization: string, fixtureUser = TEST_NATS_FIXTURE_USER): TestNatsUsers {
  const users: Record<string, NatsCredentials> = {};
  const filled = authorization.replace(USER_WITH_ENV_PASSWORD, (_m, user: string, gap: string) => {
    if (users[user]) throw new Error(`NATS authorization: user ${user} listed twice`);
    users[user] = { user, pass: randomPassword() };
    return `user: ${JSON.stringify(user)}${gap}password: ${JSON.stringify(users[user].pass)}`;
  });
  const passwords = (authorization.match(/^\s*password:/gm) ?? []).length;
  if (Object.keys(users).length === 0 || passwords !== Object.keys(users).length) {
    throw new Error(`NATS authorization: expected every user as 'user: "<name>"' then 'password: $<ENV>' (found ${Object.keys(users).length} of ${passwords} passwords)`);
  }
  if (users[fixtureUser]) throw new Error(`NATS authorization: the fixture user ${fixtureUser} is already a user`);
  const fixture = { user: fixtureUser, pass: randomPassword() };
  const end = /\n(\s*)\]\s*\n\s*\}\s*$/.exec(filled);
  if (!end) throw new Error("NATS authorization: expected the block to end with the users list's ']' and '}'");
  const entry = `    {\n      user: ${JSON.stringify(fixture.user)}\n      password: ${JSON.stringify(fixture.pass)}\n    }`;
  return { config: `${filled.slice(0, end.index)}\n${entry}${filled.slice(end.index)}`, fixture, users };
}

/** deploy/nats/auth.conf: the role users and permissions the deployments run (generated from libs/nats-kv permissions.ts). */
export function deployNatsAuthorization(): string {
  const file = join(__dirname, '../../../deploy/nats/auth.conf');
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file} (npm run nats-auth-conf writes it)`, { cause: err });
  }
}

/** TLS files of a client of a test nats-server. */
export interface NatsClientTls {
  readonly caFile: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

/** How to reach a test nats-server: its URL, its TLS, its users (absent: no TLS / no authentication). */
export interface TestNatsTarget {
  readonly url: string;
  readonly tls?: NatsClientTls;
  readonly users?: Omit<TestNatsUsers, 'config'>;
}

/** `connect()` options of a client. */
export interface TestNatsConnectOptions {
  servers: string;
  tls?: NatsClientTls;
  user?: string;
  pass?: string;
  inboxPrefix?: string;
  /**
   * How long the first dial may take, ms: a hang guard, not a deadline. The client's default (20 s)
   * ended a controller suite's connect in a fresh-clone CI beside two CPU hogs (issue 47).
   */
  timeout: number;
}

/** {@link TestNatsConnectOptions.timeout}. */
export const TEST_NATS_DIAL_TIMEOUT_MS = 120_000;

function credentialsOf(target: TestNatsTarget, role: string | undefined): NatsCredentials | undefined {
  if (!target.users) {
    if (role !== undefined) throw new Error(`the nats-server at ${target.url} runs without authentication: no user for role ${role}`);
    return undefined;
  }
  if (role === undefined) return target.users.fixture;
  const c = target.users.users[role];
  if (!c) throw new Error(`no NATS user for role ${JSON.stringify(role)} (known: ${Object.keys(target.users.users).join(', ')})`);
  return c;
}

/** `connect()` options for `target`: its URL and TLS, as `role`'s user, or the fixture's without one. */
export function natsConnectOptionsFor(target: TestNatsTarget, role?: string): TestNatsConnectOptions {
  const c = credentialsOf(target, role);
  // A role's user subscribes to its own inboxes only: libs/nats-kv natsInboxPrefix (not imported:
  // that library's tests import this harness).
  const inbox = c && role !== undefined ? { inboxPrefix: `_INBOX_${c.user}` } : {};
  return { servers: target.url, ...(target.tls ? { tls: { ...target.tls } } : {}), ...(c ? { user: c.user, pass: c.pass } : {}), ...inbox, timeout: TEST_NATS_DIAL_TIMEOUT_MS };
}

/** An app's NATS variables for `target` (NATS_SERVERS, NATS_TLS_*, NATS_USER/NATS_PASSWORD), as `role`'s user, or the fixture's without one. */
export function natsAppEnvFor(target: TestNatsTarget, role?: string): Record<string, string> {
  const c = credentialsOf(target, role);
  const tls = target.tls;
  return {
    NATS_SERVERS: target.url,
    ...(tls ? { NATS_TLS_CA_FILE: tls.caFile } : {}),
    ...(tls?.certFile && tls.keyFile ? { NATS_TLS_CERT_FILE: tls.certFile, NATS_TLS_KEY_FILE: tls.keyFile } : {}),
    ...(c ? { NATS_USER: c.user, NATS_PASSWORD: c.pass } : {}),
  };
}

/** A nats-server run as production runs it: TLS from a throwaway CA, and one user per role. */
export interface SecuredNatsServer {
  readonly server: NatsServerHandle;
  readonly pki: TestPki;
  readonly tlsMode: 'server' | 'mutual';
  readonly users: TestNatsUsers;
  /** URL, client TLS and users (what test workers need to reach it). */
  readonly target: TestNatsTarget;
  /** `connect()` options, as `role`'s user, or the fixture's without one. */
  connectOptions(role?: string): TestNatsConnectOptions;
  /** An app's NATS variables, as `role`'s user, or the fixture's without one. */
  env(role?: string): Record<string, string>;
  /** Stops the server and removes its PKI and configuration. */
  stop(): Promise<void>;
}

export interface SecuredNatsServerOptions extends Omit<NatsServerOptions, 'tls'> {
  /** The `authorization` block with `password: $ENV` references (default: deploy/nats/auth.conf). */
  authorization?: string;
  /** `server` (default): clients verify the server; `mutual`: the server also requires a client certificate from the CA. */
  tls?: 'server' | 'mutual';
}

/**
 * Starts a private nats-server (see {@link startNatsServer}) that requires TLS (a fresh
 * {@link makeTestPki}) and a user: the role users of `authorization` with fresh random passwords and
 * an unrestricted fixture user ({@link testNatsUsers}).
 */
export async function startSecuredNatsServer(opts: SecuredNatsServerOptions = {}): Promise<SecuredNatsServer> {
  const { authorization, tls: mode = 'server', ...serverOpts } = opts;
  const users = testNatsUsers(authorization ?? deployNatsAuthorization());
  const pki = makeTestPki();
  const conf = join(mkdtempSync(join(tmpdir(), 'defender-nats-auth-')), 'auth.conf');
  const cleanup = () => {
    removeTestPki(pki);
    rmSync(join(conf, '..'), { recursive: true, force: true });
  };
  writeFileSync(conf, users.config, { mode: 0o600 });
  let server: NatsServerHandle;
  try {
    server = await startNatsServer({
      ...serverOpts,
      tls: { certFile: pki.serverCert, keyFile: pki.serverKey, caFile: pki.caCert, verify: mode === 'mutual' },
      extraArgs: ['-c', conf, ...(serverOpts.extraArgs ?? [])],
    });
  } catch (err) {
    cleanup();
    throw err;
  }
  const target: TestNatsTarget = {
    url: server.url,
    tls: mode === 'mutual' ? { caFile: pki.caCert, certFile: pki.clientCert, keyFile: pki.clientKey } : { caFile: pki.caCert },
    users: { fixture: users.fixture, users: users.users },
  };
  return {
    server,
    pki,
    tlsMode: mode,
    users,
    target,
    connectOptions: (role) => natsConnectOptionsFor(target, role),
    env: (role) => natsAppEnvFor(target, role),
    async stop() {
      await server.stop();
      cleanup();
    },
  };
}

/** One user of an `authorization` block as nats-server reads it: what it may publish to and subscribe to. */
export interface ParsedNatsUser {
  readonly user: string;
  /** The `# role: <role>` comment libs/nats-kv natsAuthorizationConfig writes, if any. */
  readonly role?: string;
  readonly publish: readonly string[];
  readonly subscribe: readonly string[];
}

const USER_BLOCK = /user: "([^"]+)"([\s\S]*?)(?=\n\s*\{\s*\n\s*user:|\n\s*\]\s*\n\s*\}\s*$)/g;

/**
 * The users of an `authorization` block in the shape libs/nats-kv natsAuthorizationConfig writes
 * (deploy/nats/auth.conf): each user's publish and subscribe allow lists, as nats-server will apply
 * them. A user without a permissions block is unrestricted: both its lists are `['>']`.
 * @throws Error when an allow list is not a JSON array of strings.
 */
export function parseNatsAuthorization(authorization: string): ParsedNatsUser[] {
  const out: ParsedNatsUser[] = [];
  for (const m of authorization.matchAll(USER_BLOCK)) {
    const [, user, body] = m as unknown as [string, string, string];
    const list = (kind: 'publish' | 'subscribe'): string[] => {
      if (!/permissions:/.test(body)) return ['>'];
      const found = new RegExp(`${kind}: \\{ allow: (\\[.*\\]) \\}`).exec(body)?.[1];
      if (found === undefined) return [];
      const parsed: unknown = JSON.parse(found);
      if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === 'string')) throw new Error(`NATS authorization: ${kind} allow list of ${user} is not a list of subjects`);
      return parsed as string[];
    };
    const role = /# role: (\S+)/.exec(body)?.[1];
    out.push({ user, ...(role ? { role } : {}), publish: list('publish'), subscribe: list('subscribe') });
  }
  return out;
}
