import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { StoreConfig } from '@defender/store';

/** The workspace root. */
export const REPO = join(__dirname, '..', '..', '..', '..');
/** Written by the local-fab launcher while it runs. */
export const LOCAL_FAB_FILE = join(REPO, 'tmp', 'local-fab', 'current.json');

/** The NATS URL defenderctl tries when nothing names one (the apps' default). */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

/** How to point defenderctl at a cluster, for messages. */
export const POINT_ELSEWHERE = 'point defenderctl at your cluster with --nats nats://HOST:PORT or NATS_SERVERS=nats://HOST:PORT (or start the local fab: npm start)';

/** Where defenderctl finds the cluster. */
export interface Target {
  readonly natsServers: string[];
  /**
   * Where `natsServers` came from, in words for messages: `--nats`, `the running local fab (<run dir>)`,
   * `NATS_SERVERS`, or `the default URL: no --nats, no NATS_SERVERS, no running local fab`.
   */
  readonly natsFrom: string;
  /** The NATS user to connect as: the local fab's read-only one, else NATS_USER / NATS_PASSWORD. */
  readonly natsCredentials: { readonly user: string; readonly pass: string } | null;
  /**
   * The equipment side's NATS user, for `defenderctl event` (equipment events are the publisher
   * role's alone): the local fab's, else NATS_PUBLISHER_USER / NATS_PUBLISHER_PASSWORD.
   */
  readonly publisherCredentials: { readonly user: string; readonly pass: string } | null;
  /** The local fab's CA (its NATS serves TLS only), else NATS_TLS_CA_FILE / NATS_TLS_CERT_FILE / NATS_TLS_KEY_FILE. */
  readonly natsTls: { readonly caFile?: string; readonly certFile?: string; readonly keyFile?: string } | null;
  readonly controllerUrls: string[];
  readonly store: StoreConfig | null;
  readonly storeLabel: string | null;
  readonly buckets: { heartbeats: string; assignments: string; elections: string };
  readonly electionName: string;
  readonly control: { url: string; token: string } | null;
  /** `local fab (<run dir>)` or `environment`. */
  readonly source: string;
}

interface LocalFabFile {
  runDir?: string;
  natsUrl?: string;
  natsUser?: string;
  natsPassword?: string;
  /** The equipment side's NATS user (publishes runs and equipment events). */
  publisherUser?: string;
  publisherPassword?: string;
  /** The CA of the local fab's NATS certificate (it serves TLS only). */
  natsTlsCaFile?: string | null;
  controllerUrls?: string[];
  controlUrl?: string;
  controlToken?: string;
  store?: Record<string, string>;
  pid?: number;
}

function alive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The running local fab's description, if one runs (its launcher is alive). */
export function readLocalFab(file = LOCAL_FAB_FILE): LocalFabFile | null {
  if (!existsSync(file)) return null;
  try {
    const f = JSON.parse(readFileSync(file, 'utf8')) as LocalFabFile;
    return alive(f.pid) ? f : null;
  } catch (err) {
    if (err instanceof SyntaxError) return null;
    throw err;
  }
}

const list = (s: string | undefined) =>
  (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

function storeFrom(vars: Record<string, string | undefined>): { config: StoreConfig; label: string } | null {
  const backend = vars['STORE_BACKEND'];
  if (backend === 'cassandra') {
    const hosts = list(vars['CASSANDRA_HOSTS'] ?? '127.0.0.1');
    const keyspace = vars['CASSANDRA_KEYSPACE'] ?? 'defense_system';
    return {
      config: {
        kind: 'cassandra',
        cassandra: {
          contactPoints: hosts,
          localDataCenter: vars['CASSANDRA_LOCAL_DC'] ?? 'datacenter1',
          keyspace,
          consistency: 'QUORUM',
          migrationOwner: `defenderctl:${process.pid}`,
          ...(vars['CASSANDRA_USERNAME'] && vars['CASSANDRA_PASSWORD'] ? { credentials: { username: vars['CASSANDRA_USERNAME'], password: vars['CASSANDRA_PASSWORD'] } } : {}),
          ...cassandraTls(vars),
        },
      } as StoreConfig,
      label: `cassandra ${hosts.join(',')}/${keyspace}`,
    };
  }
  const path = vars['SQLITE_PATH'];
  if (backend === 'sqlite' || path) {
    const file = resolve(path ?? './data/defender.db');
    return existsSync(file) ? { config: { kind: 'sqlite', sqlite: { filename: file } }, label: `sqlite ${file}` } : null;
  }
  return null;
}

/**
 * Flags first, then the running local fab (tmp/local-fab/current.json), then the apps' variables
 * (NATS_SERVERS, CONTROLLER_URLS, STORE_BACKEND / SQLITE_PATH / CASSANDRA_*, NATS_KV_*,
 * ELECTION_KV_BUCKET, ELECTION_NAME, LOCAL_FAB_CONTROL_URL / _TOKEN).
 */
export function resolveTarget(flags: { nats?: string; controller?: string; store?: string }, env: NodeJS.ProcessEnv, fab = readLocalFab()): Target {
  const fabStore = fab?.store ? storeFrom(fab.store) : null;
  let store = fabStore ?? storeFrom(env);
  if (flags.store) {
    const m = /^(sqlite|cassandra):(.+)$/.exec(flags.store);
    if (!m) throw new Error('--store must be sqlite:<file> or cassandra:<host[:port],...>');
    store = m[1] === 'sqlite' ? storeFrom({ STORE_BACKEND: 'sqlite', SQLITE_PATH: m[2] }) : storeFrom({ ...env, STORE_BACKEND: 'cassandra', CASSANDRA_HOSTS: m[2] });
  }
  const natsFrom = flags.nats
    ? '--nats'
    : fab?.natsUrl
      ? `the running local fab (${fab.runDir ?? '?'})`
      : env['NATS_SERVERS']
        ? 'NATS_SERVERS'
        : 'the default URL: no --nats, no NATS_SERVERS, no running local fab';
  const controlUrl = fab?.controlUrl ?? env['LOCAL_FAB_CONTROL_URL'];
  const controlToken = fab?.controlToken ?? env['LOCAL_FAB_CONTROL_TOKEN'];
  return {
    natsServers: list(flags.nats ?? fab?.natsUrl ?? env['NATS_SERVERS'] ?? DEFAULT_NATS_URL),
    natsFrom,
    natsCredentials: natsCredentials(flags.nats ? {} : fab ?? {}, env),
    publisherCredentials: publisherCredentials(flags.nats ? {} : fab ?? {}, env),
    natsTls: fab && !flags.nats ? (fab.natsTlsCaFile ? { caFile: fab.natsTlsCaFile } : null) : natsTls(env),
    controllerUrls: list(flags.controller ?? fab?.controllerUrls?.join(',') ?? env['CONTROLLER_URLS']).map((u) => u.replace(/\/+$/, '')),
    store: store?.config ?? null,
    storeLabel: store?.label ?? null,
    buckets: {
      heartbeats: env['NATS_KV_HEARTBEATS'] ?? 'defender-heartbeats',
      assignments: env['NATS_KV_ASSIGNMENTS'] ?? 'defender-assignments',
      elections: env['ELECTION_KV_BUCKET'] ?? 'elections',
    },
    electionName: env['ELECTION_NAME'] ?? 'assignment-controller',
    control: controlUrl && controlToken ? { url: controlUrl, token: controlToken } : null,
    source: fab ? `local fab (${fab.runDir ?? '?'})` : 'environment',
  };
}

/**
 * TLS files named by the apps' variables, each pair complete. Paths only: the clients read them.
 * @throws Error naming the variable missing from a pair (as the apps refuse to start).
 */
function tlsFiles(env: Record<string, string | undefined>, prefix: 'NATS_TLS' | 'CASSANDRA_TLS'): { caFile?: string; certFile?: string; keyFile?: string } | null {
  const [caFile, certFile, keyFile] = ['CA', 'CERT', 'KEY'].map((k) => env[`${prefix}_${k}_FILE`] || undefined);
  if (!certFile !== !keyFile) throw new Error(`${prefix}_${certFile ? 'KEY' : 'CERT'}_FILE is required when ${prefix}_${certFile ? 'CERT' : 'KEY'}_FILE is set (set both, or neither)`);
  if (!caFile && !certFile) return null;
  return { ...(caFile ? { caFile } : {}), ...(certFile && keyFile ? { certFile, keyFile } : {}) };
}

function natsTls(env: NodeJS.ProcessEnv): Target['natsTls'] {
  return tlsFiles(env, 'NATS_TLS');
}

/** CASSANDRA_TLS_CA_FILE (+ client certificate, CASSANDRA_TLS_SERVER_NAME) as the store's `tls`. */
function cassandraTls(vars: Record<string, string | undefined>): { tls?: { caFile: string; certFile?: string; keyFile?: string; serverName?: string } } {
  const files = tlsFiles(vars, 'CASSANDRA_TLS');
  if (!files) return {};
  if (!files.caFile) throw new Error('CASSANDRA_TLS_CA_FILE is required when CASSANDRA_TLS_CERT_FILE is set');
  const serverName = vars['CASSANDRA_TLS_SERVER_NAME'] || undefined;
  return { tls: { ...files, caFile: files.caFile, ...(serverName ? { serverName } : {}) } };
}

/** The local fab's publisher when talking to it, else NATS_PUBLISHER_USER / NATS_PUBLISHER_PASSWORD when both are set. */
function publisherCredentials(fab: Pick<LocalFabFile, 'publisherUser' | 'publisherPassword'>, env: NodeJS.ProcessEnv): Target['publisherCredentials'] {
  if (fab.publisherUser && fab.publisherPassword) return { user: fab.publisherUser, pass: fab.publisherPassword };
  const user = env['NATS_PUBLISHER_USER'];
  const pass = env['NATS_PUBLISHER_PASSWORD'];
  return user && pass ? { user, pass } : null;
}

/** The local fab's NATS user when talking to it, else NATS_USER / NATS_PASSWORD when both are set. */
function natsCredentials(fab: Pick<LocalFabFile, 'natsUser' | 'natsPassword'>, env: NodeJS.ProcessEnv): Target['natsCredentials'] {
  if (fab.natsUser && fab.natsPassword) return { user: fab.natsUser, pass: fab.natsPassword };
  const user = env['NATS_USER'];
  const pass = env['NATS_PASSWORD'];
  return user && pass ? { user, pass } : null;
}
