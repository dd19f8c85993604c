import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { freePort, waitFor } from './ports';

export class NatsServerUnavailableError extends Error {
  override readonly name = 'NatsServerUnavailableError';
}

/** A private nats-server started by the harness. */
export interface NatsServerHandle {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  readonly monitorPort: number;
  /** e.g. `2.9.10` */
  readonly version: string;
  /** The server's TLS settings when it requires TLS (clients trust `caFile`, see {@link NatsServerTls}). */
  readonly tls: NatsServerTls | undefined;
  /** JetStream store directory; survives {@link restart}, removed by {@link stop}. */
  readonly storeDir: string;
  readonly pid: number | undefined;
  /** Graceful stop (SIGTERM), then removes the store directory. */
  stop(): Promise<void>;
  /**
   * Stops the process (SIGTERM, or SIGKILL when `hard`) and starts it again on the same port and
   * store; with `emptyStore`, on an emptied store directory (every stream and bucket gone).
   */
  restart(opts?: { hard?: boolean; downMs?: number; emptyStore?: boolean }): Promise<void>;
  /** Stops the process without removing the store (a NATS outage); {@link start} brings it back. */
  halt(opts?: { hard?: boolean }): Promise<void>;
  start(): Promise<void>;
  /** The last 4,000 characters the server logged (stderr) since it last started. */
  logTail(): string;
}

const CANDIDATES = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'];

/**
 * The oldest nats-server the harness runs (unless NATS_SERVER_BIN names one): the release line the
 * deployment runs (docker-compose's `nats:2.10`). Older servers mis-number a replicated stream's
 * messages around a leader change (docs/chaos/findings.md, finding 7).
 */
export const MIN_NATS_VERSION = '2.10.0';

/**
 * What the harness installs when the machine's nats-server is missing or older than
 * {@link MIN_NATS_VERSION}: Debian 13's package (a static Go binary that runs on Debian 12 too),
 * checked against its SHA-256 and unpacked under `<repo>/.cache/nats-server/<version>/`.
 */
export const PINNED_NATS_SERVER = {
  version: '2.10.27',
  url: 'http://deb.debian.org/debian/pool/main/n/nats-server/nats-server_2.10.27-1+b2_amd64.deb',
  sha256: '6d913ac987b78734c08537c2adeb1526cf735f216173a9170d94b185fcfe6f8a',
} as const;

/** Finds nats-server: NATS_SERVER_BIN, then PATH, then the usual Debian locations. */
export function findNatsServer(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env['NATS_SERVER_BIN'] && existsSync(env['NATS_SERVER_BIN'])) return env['NATS_SERVER_BIN'];
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    const p = join(dir, 'nats-server');
    if (dir && existsSync(p)) return p;
  }
  return CANDIDATES.find((p) => existsSync(p)) ?? null;
}

/** Whether dotted version `a` is at least `b` (numeric parts; `2.10.0` >= `2.9.10`). */
export function versionAtLeast(a: string, b: string): boolean {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? 0;
    const y = pb[i] ?? 0;
    if (!Number.isFinite(x) || !Number.isFinite(y)) throw new Error(`not a dotted version: ${a} or ${b}`);
    if (x !== y) return x > y;
  }
  return true;
}

/** Where the pinned server is unpacked (NATS_CACHE_DIR, or `<repo>/.cache/nats-server`). */
export function pinnedNatsServerPath(env: NodeJS.ProcessEnv = process.env): string {
  const root = env['NATS_CACHE_DIR'] ?? join(findWorkspaceRoot(), '.cache', 'nats-server');
  return join(root, PINNED_NATS_SERVER.version, 'nats-server');
}

function findWorkspaceRoot(): string {
  for (const start of [__dirname, process.cwd()]) {
    let dir = resolve(start);
    for (;;) {
      if (existsSync(join(dir, 'nx.json'))) return dir;
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return process.cwd();
}

/**
 * Returns the nats-server binary the harness runs: NATS_SERVER_BIN when set (as given); else the
 * machine's when it is at least {@link MIN_NATS_VERSION}; else {@link PINNED_NATS_SERVER}, fetched
 * once into the cache. Throws {@link NatsServerUnavailableError} with the reason otherwise.
 */
export function ensureNatsServer(log: (line: string) => void = (l) => process.stderr.write(l + '\n')): string {
  const chosen = process.env['NATS_SERVER_BIN'];
  if (chosen) {
    if (existsSync(chosen)) return chosen;
    throw new NatsServerUnavailableError(`NATS_SERVER_BIN=${chosen} does not exist`);
  }
  const pinned = pinnedNatsServerPath();
  if (existsSync(pinned)) return pinned;
  const found = findNatsServer();
  let foundVersion: string | undefined;
  if (found) {
    foundVersion = natsServerVersion(found);
    if (versionAtLeast(foundVersion, MIN_NATS_VERSION)) return found;
  }
  const why = found ? `nats-server ${foundVersion} at ${found} is older than ${MIN_NATS_VERSION}` : 'nats-server not found';
  if (process.platform !== 'linux' || process.arch !== 'x64' || !existsSync('/usr/bin/dpkg-deb')) {
    throw new NatsServerUnavailableError(`${why}; install nats-server ${MIN_NATS_VERSION} or newer, or set NATS_SERVER_BIN`);
  }
  log(`[infra] ${why}: fetching nats-server ${PINNED_NATS_SERVER.version} (Debian's package) into ${dirname(pinned)}`);
  installPinnedNatsServer(pinned);
  return pinned;
}

/** Downloads, checks and unpacks {@link PINNED_NATS_SERVER} to `target` (atomically: concurrent callers may both fetch, neither sees half a file). */
function installPinnedNatsServer(target: string): void {
  const dir = dirname(target);
  mkdirSync(dir, { recursive: true });
  const work = mkdtempSync(join(dir, '.fetch-'));
  try {
    const deb = join(work, 'nats-server.deb');
    // Synchronous for the callers (ensureNatsServer is); Node's fetch in a child process.
    const script =
      'const [url, file] = process.argv.slice(1); fetch(url).then(async (r) => { if (!r.ok) throw new Error(`HTTP ${r.status} for ${url}`); ' +
      "require('node:fs').writeFileSync(file, Buffer.from(await r.arrayBuffer())); }).catch((e) => { console.error(e.message); process.exit(1); });";
    try {
      execFileSync(process.execPath, ['-e', script, PINNED_NATS_SERVER.url, deb], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
    } catch (err) {
      throw new NatsServerUnavailableError(`could not download ${PINNED_NATS_SERVER.url}: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`, { cause: err });
    }
    const sha = createHash('sha256').update(readFileSync(deb)).digest('hex');
    if (sha !== PINNED_NATS_SERVER.sha256) {
      throw new NatsServerUnavailableError(`${PINNED_NATS_SERVER.url}: SHA-256 ${sha}, expected ${PINNED_NATS_SERVER.sha256}`);
    }
    const unpacked = join(work, 'root');
    execFileSync('/usr/bin/dpkg-deb', ['-x', deb, unpacked]);
    const bin = join(unpacked, 'usr', 'sbin', 'nats-server');
    const version = natsServerVersion(bin);
    if (version !== PINNED_NATS_SERVER.version) {
      throw new NatsServerUnavailableError(`the package's nats-server says ${version}, expected ${PINNED_NATS_SERVER.version}`);
    }
    renameSync(bin, target);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Versions asked of binaries, by path (every harness server start asks: once per process is enough). */
const VERSIONS = new Map<string, string>();

export function natsServerVersion(bin: string): string {
  const known = VERSIONS.get(bin);
  if (known !== undefined) return known;
  const out = execFileSync(bin, ['--version'], { encoding: 'utf8' });
  const version = /v?(\d+\.\d+\.\d+)/.exec(out)?.[1];
  if (version === undefined) throw new Error(`cannot parse nats-server version from: ${out.trim()}`);
  VERSIONS.set(bin, version);
  return version;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * TLS of a harness nats-server: it then requires TLS from every client (`--tls`). PEM files, e.g.
 * from {@link makeTestPki} (tools/infra/src/tls.ts).
 */
export interface NatsServerTls {
  certFile: string;
  keyFile: string;
  /** CA the clients trust; with `verify`, also the CA client certificates must be signed by. */
  caFile: string;
  /** Require a client certificate signed by `caFile` (mutual TLS, `--tlsverify`). */
  verify?: boolean;
}

/** nats-server's command-line options for `tls`. */
export function natsTlsArgs(tls: NatsServerTls): string[] {
  return ['--tls', '--tlscert', tls.certFile, '--tlskey', tls.keyFile, '--tlscacert', tls.caFile, ...(tls.verify ? ['--tlsverify'] : [])];
}

export interface NatsServerOptions {
  storeDir?: string;
  jetstream?: boolean;
  port?: number;
  monitorPort?: number;
  /** Require TLS from clients (and, with `verify`, client certificates). Default: plaintext. */
  tls?: NatsServerTls;
  /** More command-line options (e.g. a cluster node's name and routes, see `nats-cluster.ts`). */
  extraArgs?: readonly string[];
}

/**
 * Starts a private nats-server with JetStream on free ports and a temporary store. The server is
 * killed if this process exits. Ready when `/healthz` answers ok (JetStream included).
 */
export async function startNatsServer(opts: NatsServerOptions = {}): Promise<NatsServerHandle> {
  const bin = ensureNatsServer();
  const version = natsServerVersion(bin);
  const port = opts.port ?? (await freePort());
  const monitorPort = opts.monitorPort ?? (await freePort());
  const ownsStore = opts.storeDir === undefined;
  const storeDir = opts.storeDir ?? mkdtempSync(join(tmpdir(), 'defender-nats-'));
  const jetstream = opts.jetstream ?? true;
  let child: ChildProcess | undefined;
  let stderrTail = '';
  const killOnExit = () => child?.kill('SIGKILL');

  const start = async (): Promise<void> => {
    const args = ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-sd', storeDir];
    if (jetstream) args.push('-js');
    if (opts.tls) args.push(...natsTlsArgs(opts.tls));
    args.push(...(opts.extraArgs ?? []));
    stderrTail = '';
    const c = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child = c;
    c.stderr?.on('data', (d: Buffer) => {
      stderrTail = (stderrTail + d.toString()).slice(-4000);
    });
    process.once('exit', killOnExit);
    try {
      await waitFor(
        `nats-server on port ${port}`,
        async () => {
          if (c.exitCode !== null) throw new Error(`nats-server exited with code ${c.exitCode}: ${stderrTail}`);
          const res = await fetch(`http://127.0.0.1:${monitorPort}/healthz${jetstream ? '?js-enabled-only=true' : ''}`);
          return res.ok;
        },
        15_000,
        50,
      );
    } catch (err) {
      c.kill('SIGKILL');
      throw new NatsServerUnavailableError(`nats-server did not become healthy: ${stderrTail.slice(-1000)}`, { cause: err });
    }
  };

  const halt = async (o: { hard?: boolean } = {}): Promise<void> => {
    const c = child;
    if (!c) return;
    c.kill(o.hard ? 'SIGKILL' : 'SIGTERM');
    await exited(c);
    process.removeListener('exit', killOnExit);
    child = undefined;
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    monitorPort,
    version,
    tls: opts.tls,
    storeDir,
    get pid() {
      return child?.pid;
    },
    start,
    halt,
    logTail: () => stderrTail,
    async restart(o = {}) {
      await halt(o);
      if (o.emptyStore) {
        rmSync(storeDir, { recursive: true, force: true });
        mkdirSync(storeDir, { recursive: true });
      }
      if (o.downMs) await new Promise((r) => setTimeout(r, o.downMs));
      await start();
    },
    async stop() {
      await halt();
      if (ownsStore) rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
