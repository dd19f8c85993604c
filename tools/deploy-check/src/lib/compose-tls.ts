import { existsSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { REPO } from './repo';
import { ComposeFile, ComposeService, composeServiceApp, interpolate } from './workloads';

/**
 * TLS in docker-compose.yml: the one-shot service that makes the stack's private CA and server
 * certificates (deploy/tls/make-certs.sh), NATS and Cassandra serving only TLS with them, and every
 * client trusting the CA and naming the server its certificate names.
 */

/** The compose service that runs deploy/tls/make-certs.sh. */
export const TLS_SERVICE = 'tls';
/** The certificate script, and what it is mounted as in the tls service. */
export const MAKE_CERTS = 'deploy/tls/make-certs.sh';
/** The wrapper entrypoint that turns on Cassandra's client encryption. */
export const CASSANDRA_TLS_ENTRYPOINT = 'deploy/cassandra/tls-entrypoint.sh';
/** Directories the cassandra image's entrypoint chowns to cassandra at every start. */
const CASSANDRA_IMAGE_CHOWNED = ['/etc/cassandra', '/var/lib/cassandra', '/var/log/cassandra'];

/** One certificate the tls service makes: written to `dir` (inside the tls service), in `volume`. */
export interface CertSpec {
  readonly uid: number;
  readonly dir: string;
  readonly volume: string | undefined;
  readonly names: readonly string[];
}

/** What the tls service makes: the CA (its directory and volume) and the server certificates. */
export interface TlsPlan {
  readonly caDir: string;
  readonly caVolume: string | undefined;
  readonly certs: readonly CertSpec[];
}

const argv = (v: string | string[] | undefined): string[] => (Array.isArray(v) ? v : typeof v === 'string' ? v.split(/\s+/).filter(Boolean) : []);

/** `volume:/path[:ro]` entries of a service as { source, target, readOnly }. */
export function mounts(s: ComposeService): { source: string; target: string; readOnly: boolean }[] {
  return (s.volumes ?? []).map((v) => {
    if (typeof v === 'string') {
      const [source = '', target = '', mode = ''] = v.split(':');
      return { source, target, readOnly: mode.split(',').includes('ro') };
    }
    return { source: v.source ?? '', target: v.target ?? '', readOnly: (v as { read_only?: boolean }).read_only === true };
  });
}

/** The mount of `s` that holds `path`, the deepest one. */
export function mountOf(s: ComposeService, path: string): { source: string; target: string; readOnly: boolean } | undefined {
  return mounts(s)
    .filter((m) => m.target && (path === m.target || path.startsWith(m.target.replace(/\/?$/, '/'))))
    .sort((a, b) => b.target.length - a.target.length)[0];
}

/** The environment of a service as compose sets it with nothing in the host environment. */
export function envOf(s: ComposeService): Map<string, string> {
  const env = new Map<string, string>();
  const raw = s.environment;
  const entries: [string, string][] = Array.isArray(raw)
    ? raw.map((l) => [l.slice(0, l.indexOf('=') < 0 ? l.length : l.indexOf('=')), l.indexOf('=') < 0 ? '' : l.slice(l.indexOf('=') + 1)])
    : Object.entries(raw ?? {}).map(([k, v]) => [k, v === null ? '' : String(v)]);
  for (const [k, v] of entries) env.set(k, interpolate(v).value);
  return env;
}

/**
 * Reads the tls service's command (`sh /make-certs.sh <ca-dir> <uid>:<dir>:<names> ...`).
 *
 * @throws Error when there is no such service or its command is not that.
 */
export function tlsPlan(f: ComposeFile): TlsPlan {
  const s = f.services[TLS_SERVICE];
  if (!s) throw new Error(`docker-compose.yml has no service ${TLS_SERVICE}`);
  const args = argv(s.command);
  const script = mounts(s).find((m) => m.source.replace(/^\.\//, '') === MAKE_CERTS)?.target;
  if (!script || args[0] !== 'sh' || args[1] !== script) throw new Error(`service ${TLS_SERVICE} must run \`sh ${script ?? '<mounted ' + MAKE_CERTS + '>'} ...\``);
  const [caDir, ...specs] = args.slice(2);
  if (!caDir || specs.length === 0) throw new Error(`service ${TLS_SERVICE}: make-certs.sh needs <ca-dir> and at least one <uid>:<dir>:<names>`);
  const volumeAt = (dir: string) => {
    const m = mountOf(s, dir);
    return m && m.target === dir ? m.source : undefined;
  };
  const certs = specs.map((spec) => {
    const [uid = '', dir = '', ...rest] = spec.split(':');
    return { uid: Number(uid), dir, volume: volumeAt(dir), names: rest.join(':').split(',').filter(Boolean) };
  });
  return { caDir, caVolume: volumeAt(caDir), certs };
}

/** The certificate whose volume is mounted in `s` at the directory of `path` (tls.crt, ca.crt, ...). */
function certAt(plan: TlsPlan, s: ComposeService, path: string): CertSpec | undefined {
  const m = mountOf(s, path);
  return m ? plan.certs.find((c) => c.volume === m.source) : undefined;
}

/** Whether `path` in `s` is the stack's CA: a read-only mount of the CA volume (or a server volume, which holds ca.crt too). */
function isCaFile(plan: TlsPlan, s: ComposeService, path: string): boolean {
  const m = mountOf(s, path);
  if (!m || !m.readOnly || posix.basename(path) !== 'ca.crt' || posix.dirname(path) !== m.target) return false;
  return m.source === plan.caVolume || plan.certs.some((c) => c.volume === m.source);
}

/** Host names in NATS_SERVERS (`nats://host:port,...`). */
function natsHosts(v: string): string[] {
  return v
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean)
    .map((u) => new URL(u).hostname);
}

/** Whether `s` waits for the tls service to finish (directly). */
function waitsForTls(s: ComposeService): boolean {
  const deps = s.depends_on;
  return !!deps && !Array.isArray(deps) && deps[TLS_SERVICE]?.condition === 'service_completed_successfully';
}

/** The value of `--flag=value` or `--flag value` in an argument list. */
function flag(args: readonly string[], name: string): string | undefined {
  for (const [i, a] of args.entries()) {
    if (a === name) return args[i + 1];
    if (a.startsWith(`${name}=`)) return a.slice(name.length + 1);
  }
  return undefined;
}

/** The service named by `names` of a certificate: its `nats` / `cassandra` server. */
function serverCert(plan: TlsPlan, services: Record<string, ComposeService>, name: string, certPathOf: (s: ComposeService) => string | undefined): CertSpec | undefined {
  const s = services[name];
  const path = s && certPathOf(s);
  return s && path ? certAt(plan, s, path) : undefined;
}

/** `--tlscert` of the NATS service. */
export const natsCertPath = (s: ComposeService): string | undefined => flag(argv(s.command), '--tlscert');
/** The Cassandra service's TLS directory (CASSANDRA_TLS_DIR, where the entrypoint finds tls.pem). */
export const cassandraCertPath = (s: ComposeService): string | undefined => {
  const dir = envOf(s).get('CASSANDRA_TLS_DIR');
  return dir ? `${dir}/tls.pem` : undefined;
};

/**
 * Problems with TLS in a compose file: NATS (`nats`) requires TLS with a certificate from the tls
 * service; Cassandra (`cassandra`) runs the TLS entrypoint with one; every client (app services and
 * tools, by the variables they set) trusts the stack's CA through a read-only mount, waits for the
 * tls service, and names a server its certificate names.
 */
export function checkComposeTls(f: ComposeFile, apps: readonly string[]): string[] {
  const problems: string[] = [];
  let plan: TlsPlan;
  try {
    plan = tlsPlan(f);
  } catch (err) {
    return [(err as Error).message];
  }
  const services = f.services;
  if (!plan.caVolume) problems.push(`service ${TLS_SERVICE}: the CA directory ${plan.caDir} is not a volume`);
  for (const c of plan.certs) if (!c.volume) problems.push(`service ${TLS_SERVICE}: ${c.dir} is not a volume (certificate for ${c.names.join(',')})`);

  // NATS: --tls with a certificate and key of the tls service, nothing that lets plaintext in.
  const nats = services['nats'];
  const natsCert = serverCert(plan, services, 'nats', natsCertPath);
  if (!nats) problems.push('no service nats');
  else {
    const args = argv(nats.command);
    if (!args.includes('--tls')) problems.push('service nats: no --tls (clients may connect in plaintext)');
    for (const [opt, file] of [['--tlscert', 'tls.crt'], ['--tlskey', 'tls.key']] as const) {
      const path = flag(args, opt);
      const cert = path && certAt(plan, nats, path);
      if (!path || !cert || posix.basename(path) !== file) problems.push(`service nats: ${opt} must be the ${file} of a certificate the ${TLS_SERVICE} service makes`);
      else if (!mountOf(nats, path)?.readOnly) problems.push(`service nats: ${path} is not mounted read-only`);
    }
    if (natsCert && natsCert.uid !== 0) problems.push(`service nats: its key belongs to uid ${natsCert.uid}, nats-server runs as root (0)`);
    if (!waitsForTls(nats)) problems.push(`service nats: does not wait for ${TLS_SERVICE} (service_completed_successfully)`);
    const conf = flag(args, '--config');
    const confSource = conf ? mountOf(nats, conf)?.source : undefined;
    if (confSource && existsSync(join(REPO, confSource)) && /allow_non_tls|no_tls/.test(readFileSync(join(REPO, confSource), 'utf8'))) {
      problems.push(`service nats: ${confSource} lets clients in without TLS`);
    }
  }

  // Cassandra: the TLS entrypoint, with the tls.pem of a certificate the cassandra user can read.
  const cassandra = services['cassandra'];
  const cassandraCert = serverCert(plan, services, 'cassandra', cassandraCertPath);
  if (cassandra) {
    const entry = argv(cassandra['entrypoint'] as string | string[] | undefined);
    const script = mounts(cassandra).find((m) => m.source.replace(/^\.\//, '') === CASSANDRA_TLS_ENTRYPOINT);
    if (!script || !entry.includes(script.target)) problems.push(`service cassandra: its entrypoint must be ${CASSANDRA_TLS_ENTRYPOINT} (mounted), which turns TLS on`);
    if (!cassandraCert) problems.push(`service cassandra: CASSANDRA_TLS_DIR must be a read-only mount of a certificate the ${TLS_SERVICE} service makes`);
    else if (cassandraCert.uid !== 999) problems.push(`service cassandra: its key belongs to uid ${cassandraCert.uid}, Cassandra runs as 999`);
    const tlsDir = envOf(cassandra).get('CASSANDRA_TLS_DIR') ?? '';
    // The image's entrypoint chowns these (as root, before dropping to cassandra); on a read-only mount that fails and it exits.
    for (const owned of CASSANDRA_IMAGE_CHOWNED) {
      if (tlsDir === owned || tlsDir.startsWith(`${owned}/`)) problems.push(`service cassandra: CASSANDRA_TLS_DIR ${tlsDir} is under ${owned}, which the image's entrypoint chowns (fails on a read-only mount)`);
    }
    if (!waitsForTls(cassandra)) problems.push(`service cassandra: does not wait for ${TLS_SERVICE} (service_completed_successfully)`);
    const test = cassandra.healthcheck?.test;
    if (!(Array.isArray(test) ? test.join(' ') : String(test ?? '')).includes('--ssl')) problems.push('service cassandra: the healthcheck must use cqlsh --ssl (plaintext is refused)');
  }

  // Clients.
  for (const [name, s] of Object.entries(services)) {
    const env = envOf(s);
    const at = `service ${name}`;
    const app = composeServiceApp(s, apps);
    const client = app !== undefined || env.has('NATS_SERVERS');
    if (!client) continue;
    if (!waitsForTls(s)) problems.push(`${at}: does not wait for ${TLS_SERVICE} (service_completed_successfully)`);
    const ca = (key: string) => {
      const path = env.get(key);
      if (!path) problems.push(`${at}: ${key} is not set (it would connect without TLS)`);
      else if (!isCaFile(plan, s, path)) problems.push(`${at}: ${key}=${path} is not the stack's ca.crt on a read-only mount of a ${TLS_SERVICE} volume`);
      return path;
    };
    if (env.has('NATS_SERVERS')) {
      ca('NATS_TLS_CA_FILE');
      for (const host of natsHosts(env.get('NATS_SERVERS') ?? '')) {
        if (natsCert && !natsCert.names.includes(host)) problems.push(`${at}: NATS_SERVERS names ${host}, which the NATS certificate does not (${natsCert.names.join(',')})`);
      }
    }
    if (env.get('STORE_BACKEND') === 'cassandra') {
      ca('CASSANDRA_TLS_CA_FILE');
      const sn = env.get('CASSANDRA_TLS_SERVER_NAME');
      if (!sn) problems.push(`${at}: CASSANDRA_TLS_SERVER_NAME is not set (the driver would check the node's container address, which no certificate names)`);
      else if (cassandraCert && !cassandraCert.names.includes(sn)) problems.push(`${at}: CASSANDRA_TLS_SERVER_NAME=${sn} is not among the Cassandra certificate's names (${cassandraCert.names.join(',')})`);
    }
    if (env.has('ELECTION_AGENT_ADDR')) {
      ca('ELECTION_TLS_CA_FILE');
      for (const addr of (env.get('ELECTION_AGENT_ADDR') ?? '').split(',').filter(Boolean)) {
        const host = addr.trim().replace(/^dns:\/{3}/, '').split(':')[0] ?? '';
        const agent = services[host];
        const cert = agent ? certAt(plan, agent, envOf(agent).get('GRPC_TLS_CERT_FILE') ?? '') : undefined;
        if (!cert || !cert.names.includes(host)) problems.push(`${at}: ELECTION_AGENT_ADDR names ${host}, whose gRPC certificate does not name it`);
      }
    }
    const grpcCert = env.get('GRPC_TLS_CERT_FILE');
    if (grpcCert) {
      const cert = certAt(plan, s, grpcCert);
      if (!cert) problems.push(`${at}: GRPC_TLS_CERT_FILE=${grpcCert} is not a certificate the ${TLS_SERVICE} service makes`);
      else if (cert.uid !== 1000) problems.push(`${at}: its gRPC key belongs to uid ${cert.uid}, the apps run as node (1000)`);
    }
  }
  return problems;
}

/**
 * The client_encryption_options the Cassandra entrypoint writes: encryption on, not optional (a
 * plaintext client is refused), PEM key material from CASSANDRA_TLS_DIR.
 */
export function checkCassandraTlsEntrypoint(script: string): string[] {
  const block = /BLOCK="(client_encryption_options:[\s\S]*?)"/.exec(script)?.[1];
  if (!block) return [`${CASSANDRA_TLS_ENTRYPOINT}: no client_encryption_options block`];
  const problems: string[] = [];
  const value = (key: string) => new RegExp(`^  ${key}:\\s*(\\S+)`, 'm').exec(block)?.[1];
  if (value('enabled') !== 'true') problems.push(`${CASSANDRA_TLS_ENTRYPOINT}: enabled must be true`);
  if (value('optional') !== 'false') problems.push(`${CASSANDRA_TLS_ENTRYPOINT}: optional must be false (else plaintext clients are served too)`);
  if (!/class_name:\s*org\.apache\.cassandra\.security\.PEMBasedSslContextFactory/.test(block)) problems.push(`${CASSANDRA_TLS_ENTRYPOINT}: the keystore is PEM (PEMBasedSslContextFactory)`);
  if (value('keystore') !== '$tls_dir/tls.pem') problems.push(`${CASSANDRA_TLS_ENTRYPOINT}: keystore must be $tls_dir/tls.pem`);
  if (!/exec docker-entrypoint\.sh "\$@"/.test(script)) problems.push(`${CASSANDRA_TLS_ENTRYPOINT}: must end by running the image's docker-entrypoint.sh`);
  return problems;
}
