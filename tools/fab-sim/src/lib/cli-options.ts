import { parseArgs } from 'node:util';
import { EXCURSION_KINDS, parseKinds, parseSizes, type ExcursionKind } from './excursions';
import { FAB_SIZES, type FabProfile } from './fab';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const USAGE = `Usage: fab-sim <describe|seed|run> [options]

  describe                 print the generated fab (no servers needed)
  seed                     write the fab's chambers to chamber_metadata (what the controller assigns)
  run                      seed, then publish runs (traces to the store, notifications to NATS) and
                           print a detection summary

fab:
  --size tiny|small|medium|large|fab   tools: ${Object.entries(FAB_SIZES).map(([k, v]) => `${k} ${v}`).join(', ')} (default small)
  --tools N                            exact number of tools (overrides --size)
  --seed N                             fab, schedule and noise seed (default 1)
  --sensors A-B                        analog sensors per chamber (default 2-4; 3-5 with --profile detection)
  --profile fab|detection|real-equipment
                                       fab: the whole fab's chambers (default); detection: small traces
                                       (1-2 Hz, 180-420 s) of the same tool types, for detection studies;
                                       real-equipment: detection plus lattice sensors, equipment events,
                                       production periods and closed-loop groups

run:
  --runs N                 runs per chamber (default 80)
  --warmup-runs N          first runs per chamber published at full speed: the Phase I history (default 30, the default strategy's Phase I)
  --speed X|max            simulated seconds per second after the warm-up (default 100)
  --excursions N           chambers with an injected excursion (default 20% of chambers, at least 4)
  --excursion-kinds LIST   ${EXCURSION_KINDS.join(',')} (default all, in turn)
  --excursion-sizes LIST   sizes in sigma units of the statistic each excursion moves, in turn (default 1,2,3)
  --excursion-after N      earliest run index of an excursion (default 35: after Phase I's 30 runs)
  --out DIR                ground truth and summary.json (default tmp/fab-sim/<session>)
  --session ID             run-id prefix (default: random)
  --keep-traces N          processed traces kept per chamber (default 5; older ones are deleted)
  --max-backlog N          pause publishing while more runs than this wait to be processed (default 400)
  --settle-timeout S       wait at most S seconds at the end for the cluster to catch up (default 300)
  --concurrency N          runs written at once (default 4)
  --progress MODE          auto|bar|plain|none (default auto: bar on a terminal)
  --json                   print the result as JSON on stdout (the summary still goes to stderr)
  --no-seed                do not (re)write chamber_metadata first (the launcher seeds before the cluster starts)
  --min-detection F        exit 3 when fewer than this fraction of excursions were detected

connections (defaults from the apps' variables):
  --nats URL               NATS_SERVERS (nats://127.0.0.1:4222)
  --store sqlite|cassandra STORE_BACKEND (sqlite)
  --sqlite-path FILE       SQLITE_PATH (./data/defender.db)
  --cassandra-hosts H:P,.. CASSANDRA_HOSTS (127.0.0.1)
  --cassandra-dc DC        CASSANDRA_LOCAL_DC (datacenter1)
  --cassandra-keyspace K   CASSANDRA_KEYSPACE (defense_system)
  (environment only)       NATS_USER / NATS_PASSWORD, NATS_TLS_CA_FILE, NATS_TLS_CERT_FILE / NATS_TLS_KEY_FILE,
                           CASSANDRA_TLS_CA_FILE, CASSANDRA_TLS_CERT_FILE / _KEY_FILE, CASSANDRA_TLS_SERVER_NAME

  -h, --help               this text
`;

export interface CliOptions {
  readonly command: 'describe' | 'seed' | 'run';
  readonly tools: number;
  readonly seed: number;
  /** Undefined: the profile's default. */
  readonly sensors: readonly [number, number] | undefined;
  readonly profile: FabProfile;
  readonly runs: number;
  readonly warmupRuns: number;
  readonly speed: number | 'max';
  readonly excursions: number | undefined;
  readonly kinds: readonly ExcursionKind[];
  readonly sizes: readonly number[];
  readonly excursionAfter: number;
  readonly out: string | undefined;
  readonly session: string | undefined;
  readonly keepTraces: number;
  readonly maxBacklog: number;
  readonly settleTimeoutSeconds: number;
  readonly concurrency: number;
  readonly progress: 'auto' | 'bar' | 'plain' | 'none';
  readonly json: boolean;
  /** Write chamber_metadata before running (default; `--no-seed` skips it). */
  readonly writeMetadata: boolean;
  readonly minDetection: number | undefined;
  readonly nats: string[];
  /** NATS_USER / NATS_PASSWORD from the environment (never flags: a password on a command line is visible to every user of the machine); the `publisher` identity where NATS has per-app users. */
  readonly natsCredentials?: { readonly user: string; readonly pass: string };
  /** NATS_TLS_CA_FILE, NATS_TLS_CERT_FILE / NATS_TLS_KEY_FILE from the environment, as the apps read them. */
  readonly natsTls?: { readonly caFile?: string; readonly certFile?: string; readonly keyFile?: string };
  readonly store: 'sqlite' | 'cassandra';
  readonly sqlitePath: string;
  readonly cassandraHosts: string[];
  readonly cassandraDc: string;
  readonly cassandraKeyspace: string;
  /** CASSANDRA_TLS_CA_FILE (+ CASSANDRA_TLS_CERT_FILE / _KEY_FILE, CASSANDRA_TLS_SERVER_NAME) from the environment. */
  readonly cassandraTls?: { readonly caFile: string; readonly certFile?: string; readonly keyFile?: string; readonly serverName?: string };
}

function int(name: string, v: string | undefined, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be an integer in ${min}..${max}, got "${v}"`);
  return n;
}

/** Parses the command line (`argv` without node and script); `env` supplies connection defaults. */
export function parseCli(argv: readonly string[], env: NodeJS.ProcessEnv): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        size: { type: 'string' },
        tools: { type: 'string' },
        seed: { type: 'string' },
        sensors: { type: 'string' },
        profile: { type: 'string' },
        runs: { type: 'string' },
        'warmup-runs': { type: 'string' },
        speed: { type: 'string' },
        excursions: { type: 'string' },
        'excursion-kinds': { type: 'string' },
        'excursion-sizes': { type: 'string' },
        'excursion-after': { type: 'string' },
        out: { type: 'string' },
        session: { type: 'string' },
        'keep-traces': { type: 'string' },
        'max-backlog': { type: 'string' },
        'settle-timeout': { type: 'string' },
        concurrency: { type: 'string' },
        progress: { type: 'string' },
        json: { type: 'boolean' },
        'no-seed': { type: 'boolean' },
        'min-detection': { type: 'string' },
        nats: { type: 'string' },
        store: { type: 'string' },
        'sqlite-path': { type: 'string' },
        'cassandra-hosts': { type: 'string' },
        'cassandra-dc': { type: 'string' },
        'cassandra-keyspace': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values: v, positionals } = parsed;
  if (v.help) throw new UsageError('');
  const command = positionals[0];
  if (command !== 'describe' && command !== 'seed' && command !== 'run') throw new UsageError(command ? `unknown command "${command}"` : 'a command is required');
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
  const size = v.size ?? 'small';
  if (!(size in FAB_SIZES)) throw new UsageError(`--size must be one of ${Object.keys(FAB_SIZES).join(', ')}`);
  const tools = int('tools', v.tools, FAB_SIZES[size] ?? 20, 1, 5000);
  let sensors: readonly [number, number] | undefined;
  if (v.sensors !== undefined) {
    const sm = /^(\d+)-(\d+)$/.exec(v.sensors);
    if (!sm || Number(sm[1]) < 1 || Number(sm[2]) < Number(sm[1])) throw new UsageError(`--sensors must be A-B with 1 <= A <= B, got "${v.sensors}"`);
    sensors = [Number(sm[1]), Number(sm[2])];
  }
  const profile = (v.profile ?? 'fab') as FabProfile;
  if (profile !== 'fab' && profile !== 'detection' && profile !== 'real-equipment') throw new UsageError('--profile must be fab, detection or real-equipment');
  const speedText = v.speed ?? '100';
  const speed = speedText === 'max' ? 'max' : Number(speedText);
  if (speed !== 'max' && !(Number.isFinite(speed) && speed > 0 && speed <= 1e6)) throw new UsageError(`--speed must be a positive number or max, got "${speedText}"`);
  let kinds: ExcursionKind[] = [...EXCURSION_KINDS];
  let sizes = [1, 2, 3];
  try {
    if (v['excursion-kinds'] !== undefined) kinds = parseKinds(v['excursion-kinds']);
    if (v['excursion-sizes'] !== undefined) sizes = parseSizes(v['excursion-sizes']);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const progress = (v.progress ?? 'auto') as CliOptions['progress'];
  if (!['auto', 'bar', 'plain', 'none'].includes(progress)) throw new UsageError('--progress must be auto, bar, plain or none');
  const store = (v.store ?? env['STORE_BACKEND'] ?? 'sqlite') as CliOptions['store'];
  if (store !== 'sqlite' && store !== 'cassandra') throw new UsageError('--store must be sqlite or cassandra');
  const minDetection = v['min-detection'] === undefined ? undefined : Number(v['min-detection']);
  if (minDetection !== undefined && !(minDetection >= 0 && minDetection <= 1)) throw new UsageError('--min-detection must be in 0..1');
  const session = v.session;
  if (session !== undefined && !/^[A-Za-z0-9_-]{1,40}$/.test(session)) throw new UsageError('--session must be 1-40 characters of A-Z a-z 0-9 _ -');
  const list = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);
  return {
    command,
    tools,
    seed: int('seed', v.seed, 1, 0, 2 ** 32 - 1),
    sensors,
    profile,
    runs: int('runs', v.runs, 80, 1, 100_000),
    warmupRuns: int('warmup-runs', v['warmup-runs'], 30, 0, 100_000),
    speed,
    excursions: v.excursions === undefined ? undefined : int('excursions', v.excursions, 0, 0, 100_000),
    kinds,
    sizes,
    excursionAfter: int('excursion-after', v['excursion-after'], 35, 0, 100_000),
    out: v.out,
    session,
    keepTraces: int('keep-traces', v['keep-traces'], 5, 0, 100_000),
    maxBacklog: int('max-backlog', v['max-backlog'], 400, 1, 10_000_000),
    settleTimeoutSeconds: int('settle-timeout', v['settle-timeout'], 300, 0, 86_400),
    concurrency: int('concurrency', v.concurrency, 4, 1, 256),
    progress,
    json: v.json ?? false,
    writeMetadata: !(v['no-seed'] ?? false),
    minDetection,
    nats: list(v.nats ?? env['NATS_SERVERS'] ?? 'nats://127.0.0.1:4222'),
    ...natsCredentials(env),
    ...natsTls(env),
    store,
    sqlitePath: v['sqlite-path'] ?? env['SQLITE_PATH'] ?? './data/defender.db',
    cassandraHosts: list(v['cassandra-hosts'] ?? env['CASSANDRA_HOSTS'] ?? '127.0.0.1'),
    cassandraDc: v['cassandra-dc'] ?? env['CASSANDRA_LOCAL_DC'] ?? 'datacenter1',
    cassandraKeyspace: v['cassandra-keyspace'] ?? env['CASSANDRA_KEYSPACE'] ?? 'defense_system',
    ...cassandraTls(env),
  };
}

/** NATS TLS files; a client certificate needs its key. @throws UsageError naming the missing one. */
function natsTls(env: NodeJS.ProcessEnv): { natsTls?: { caFile?: string; certFile?: string; keyFile?: string } } {
  const caFile = env['NATS_TLS_CA_FILE'] || undefined;
  const certFile = env['NATS_TLS_CERT_FILE'] || undefined;
  const keyFile = env['NATS_TLS_KEY_FILE'] || undefined;
  if (!certFile !== !keyFile) throw new UsageError(`NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE go together: ${certFile ? 'NATS_TLS_KEY_FILE' : 'NATS_TLS_CERT_FILE'} is not set`);
  if (!caFile && !certFile) return {};
  return { natsTls: { ...(caFile ? { caFile } : {}), ...(certFile && keyFile ? { certFile, keyFile } : {}) } };
}

/** Cassandra TLS files as the apps read them. @throws UsageError for a half pair, or settings without the CA. */
function cassandraTls(env: NodeJS.ProcessEnv): { cassandraTls?: { caFile: string; certFile?: string; keyFile?: string; serverName?: string } } {
  const [caFile, certFile, keyFile, serverName] = ['CA_FILE', 'CERT_FILE', 'KEY_FILE', 'SERVER_NAME'].map((k) => env[`CASSANDRA_TLS_${k}`] || undefined);
  if (!certFile !== !keyFile) throw new UsageError(`CASSANDRA_TLS_CERT_FILE and CASSANDRA_TLS_KEY_FILE go together: ${certFile ? 'CASSANDRA_TLS_KEY_FILE' : 'CASSANDRA_TLS_CERT_FILE'} is not set`);
  if (!caFile) {
    if (certFile || serverName) throw new UsageError('CASSANDRA_TLS_CA_FILE is required with CASSANDRA_TLS_CERT_FILE or CASSANDRA_TLS_SERVER_NAME (it turns TLS on)');
    return {};
  }
  return { cassandraTls: { caFile, ...(certFile && keyFile ? { certFile, keyFile } : {}), ...(serverName ? { serverName } : {}) } };
}

/** NATS_USER and NATS_PASSWORD, both or neither. @throws UsageError naming the missing one. */
function natsCredentials(env: NodeJS.ProcessEnv): { natsCredentials?: { user: string; pass: string } } {
  const user = env['NATS_USER'] || undefined;
  const pass = env['NATS_PASSWORD'] || undefined;
  if (!user && !pass) return {};
  if (!user || !pass) throw new UsageError(`NATS_USER and NATS_PASSWORD go together: ${user ? 'NATS_PASSWORD' : 'NATS_USER'} is not set`);
  return { natsCredentials: { user, pass } };
}
