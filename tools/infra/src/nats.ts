import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
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
}

const CANDIDATES = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'];

/** Finds nats-server on PATH or in the usual Debian locations. */
export function findNatsServer(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env['NATS_SERVER_BIN'] && existsSync(env['NATS_SERVER_BIN'])) return env['NATS_SERVER_BIN'];
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    const p = join(dir, 'nats-server');
    if (dir && existsSync(p)) return p;
  }
  return CANDIDATES.find((p) => existsSync(p)) ?? null;
}

/**
 * Returns the nats-server binary, installing Debian's package when it is missing and we are root
 * on a Debian-like system. Throws {@link NatsServerUnavailableError} with the reason otherwise.
 */
export function ensureNatsServer(log: (line: string) => void = (l) => process.stderr.write(l + '\n')): string {
  const found = findNatsServer();
  if (found) return found;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !existsSync('/usr/bin/apt-get')) {
    throw new NatsServerUnavailableError(
      'nats-server not found on PATH; install it (Debian: apt-get install nats-server) or set NATS_SERVER_BIN',
    );
  }
  log('[infra] nats-server not found: installing Debian package nats-server');
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '-qq', 'nats-server'], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch (err) {
    throw new NatsServerUnavailableError('apt-get install nats-server failed', { cause: err });
  }
  const installed = findNatsServer();
  if (!installed) throw new NatsServerUnavailableError('nats-server still not found after installing the package');
  return installed;
}

export function natsServerVersion(bin: string): string {
  const out = execFileSync(bin, ['--version'], { encoding: 'utf8' });
  const version = /v?(\d+\.\d+\.\d+)/.exec(out)?.[1];
  if (version === undefined) throw new Error(`cannot parse nats-server version from: ${out.trim()}`);
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
