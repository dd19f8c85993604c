import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NATS_ROLES, type NatsRole } from '@defender/nats-kv';
import { parseNatsAuthorization } from '@defender/infra-harness';
import { natsAuthConf, natsAuthConfCertificates, NATS_AUTH_CONF, natsPasswordEnv } from './lib/nats-auth';
import { DOC_BEGIN, DOC_END, NATS_PERMISSION_DOCS, natsPermissionTable } from './lib/nats-permissions-doc';
import { listApps, readRepoFile, REPO } from './lib/repo';
import { ComposeService, composeServiceApp, interpolate, parseCompose } from './lib/workloads';

const apps = listApps().map((a) => a.name);
const compose = parseCompose(readRepoFile('docker-compose.yml'));

/** The NATS role each compose service connects as (by the app it runs; fab-sim is the fab's equipment). */
const ROLE_OF_APP: Record<string, NatsRole> = { defender: 'defender', 'assignment-controller': 'controller', 'election-agent': 'election-agent', dashboard: 'dashboard' };
function roleOf(name: string, s: ComposeService): NatsRole | undefined {
  const app = composeServiceApp(s, apps);
  if (app) return ROLE_OF_APP[app];
  return name === 'fab-sim' ? 'publisher' : undefined;
}

/** A service's environment variable as compose would set it with nothing in the host environment. */
function envOf(s: ComposeService, name: string): string | undefined {
  const env = s.environment;
  if (!env || Array.isArray(env)) return undefined;
  const v = env[name];
  return v === undefined || v === null ? undefined : interpolate(String(v)).value;
}

describe('NATS identities in the deployments', () => {
  it(`${NATS_AUTH_CONF} is what \`npm run nats-auth-conf\` writes from libs/nats-kv permissions.ts`, () => {
    const file = join(REPO, NATS_AUTH_CONF);
    // Fails after a permissions change until `npm run nats-auth-conf` is run and its output committed.
    expect(existsSync(file) ? readFileSync(file, 'utf8') : '(missing)').toBe(natsAuthConf());
  });

  it('compose runs NATS with that file, every password variable set, and each app connects as its own role', () => {
    const nats = compose.services['nats']!;
    expect(nats.command).toContain('--config=/etc/nats/auth.conf');
    expect(nats.volumes).toContain(`./${NATS_AUTH_CONF}:/etc/nats/auth.conf:ro`);
    for (const role of NATS_ROLES) expect(envOf(nats, natsPasswordEnv(role))).toBeTruthy();
    const seen = new Set<string>();
    for (const [name, s] of Object.entries(compose.services)) {
      const role = roleOf(name, s);
      if (!role) continue;
      seen.add(role);
      expect({ service: name, user: envOf(s, 'NATS_USER') }).toEqual({ service: name, user: role });
      // The same password nats-server reads for that user.
      expect({ service: name, password: envOf(s, 'NATS_PASSWORD') }).toEqual({ service: name, password: envOf(nats, natsPasswordEnv(role)) });
    }
    // Every role but the embedded controller's defender: compose runs the standalone controller.
    expect([...seen].sort()).toEqual(NATS_ROLES.filter((r) => r !== 'defender-controller').sort());
  });

  it('the mutual-TLS variant (npm run nats-auth-conf -- --certificates) has the same users and rights, and no password', () => {
    const cert = natsAuthConfCertificates();
    expect(parseNatsAuthorization(cert)).toEqual(parseNatsAuthorization(natsAuthConf()));
    expect(cert).not.toMatch(/password/);
    expect(cert).toContain('verify_and_map: true');
  });

  describe.each(NATS_PERMISSION_DOCS)('%s and deploy/nats/auth.conf (issue 50)', (doc) => {
    const text = readRepoFile(doc);
    const conf = readFileSync(join(REPO, NATS_AUTH_CONF), 'utf8');

    it('holds the permission table generated from the file (npm run nats-auth-conf writes it)', () => {
      const block = text.slice(text.indexOf(DOC_BEGIN), text.indexOf(DOC_END) + DOC_END.length);
      expect(block).toBe(natsPermissionTable(conf));
    });

    it('quotes no NATS subject that the file grants nobody (no stale "$JS.API.>" or "$KV.>" for a user)', () => {
      const granted = new Set(parseNatsAuthorization(conf).flatMap((u) => [...u.publish, ...u.subscribe]));
      // Backticked subjects outside the generated block (and outside SECURITY.md's list of the gaps
      // issue 50 found, which quotes the old grants): JetStream API, KV and inbox subjects.
      const outside = (text.slice(0, text.indexOf(DOC_BEGIN)) + text.slice(text.indexOf(DOC_END))).replace(/\n## Issue 50:[\s\S]*?(?=\n## )/, '\n');
      const quoted = [...outside.matchAll(/`((?:\$JS|\$KV|_INBOX)[^`\s]*)`/g)].map((m) => m[1]!);
      expect(quoted.filter((q) => !granted.has(q) && !/<[a-z]+>/.test(q))).toEqual([]);
    });
  });
});
