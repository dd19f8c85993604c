/**
 * Real Apache Cassandra for integration tests.
 *
 * Cassandra is not packaged for Debian and no container engine is assumed, so the harness
 * resolves the server (`org.apache.cassandra:cassandra-all`) and its runtime dependencies from
 * Maven Central with `mvn`, caches the jars under `<repo>/.cache/cassandra/<version>/`, and runs
 * `CassandraDaemon` in the foreground on JDK 17 with a generated single-node `cassandra.yaml`,
 * free ports and a throwaway data directory. When `CASSANDRA_HOSTS` is set, that cluster is used
 * instead and nothing is started.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from 'cassandra-driver';
import { freePort } from './ports';
import type { TestPki } from './tls';
import { ProgressLine, shortDuration, type ProgressMode } from './progress';

/** Cassandra release used when neither the caller nor `CASSANDRA_VERSION` picks one (the 5.0.x line runs on JDK 17). */
export const CASSANDRA_DEFAULT_VERSION = '5.0.9';
/** Data-centre name of the node the harness starts (`SimpleSnitch` always reports this one). */
export const CASSANDRA_DEFAULT_DC = 'datacenter1';
/** JDK major version the bundled JVM options are written for. */
const REQUIRED_JAVA_MAJOR = 17;

const MARKER_FILE = '.complete.json';
const LOG_TAIL_LINES = 40;

/** A running (or external) Cassandra cluster as seen by tests. */
export interface CassandraHandle {
  /** `host:port` strings for `cassandra-driver`'s `contactPoints`, e.g. `['127.0.0.1:40123']`. */
  contactPoints: string[];
  /** Data-centre name for the driver's `localDataCenter`. */
  localDataCenter: string;
  /** `release_version` as reported by `system.local` of the node that answered. */
  version: string;
  /** True when `CASSANDRA_HOSTS` was used and nothing was started. */
  external: boolean;
  /** The PKI whose server certificate the node presents to TLS clients (`startCassandra({ tls })`); undefined: plaintext only. */
  tls?: TestPki;
  /** Node log file (stdout + stderr of the JVM); null for an external cluster. Removed by `stop()`. */
  logFile: string | null;
  /** Process id of our JVM; null for an external cluster. */
  pid: number | null;
  /** Stops our node (SIGTERM, then SIGKILL after a timeout) and removes its directory; no-op for external. */
  stop(): Promise<void>;
}

/** java or mvn is missing or unusable: the caller may skip the tests that need Cassandra. */
export class CassandraUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CassandraUnavailableError';
  }
}

/** Resolving the Cassandra jars through Maven failed (network, repository, unknown version). */
export class CassandraFetchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CassandraFetchError';
  }
}

/** The node did not answer CQL in time or died while starting; the message ends with its log tail. */
export class CassandraStartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CassandraStartError';
  }
}

type LogFn = (line: string) => void;

const defaultLog: LogFn = (line) => {
  process.stderr.write(`${line}\n`);
};

/**
 * Reads an external cluster from the environment.
 *
 * `CASSANDRA_HOSTS` is a comma-separated list of `host` or `host:port` (port 1..65535);
 * `CASSANDRA_LOCAL_DC` defaults to `datacenter1`. Returns null when `CASSANDRA_HOSTS` is unset or
 * blank; throws when an entry has an invalid port.
 */
export function cassandraFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): { contactPoints: string[]; localDataCenter: string } | null {
  const raw = env['CASSANDRA_HOSTS'];
  if (raw === undefined || raw.trim() === '') return null;
  const contactPoints = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const point of contactPoints) {
    // Only "host:port" is checked; bare IPv6 addresses contain several colons and have no port.
    const parts = point.split(':');
    if (parts.length === 2) {
      const port = Number(parts[1]);
      if (parts[0] === '' || !Number.isInteger(port) || port < 1 || port > 65535) {
        throw new Error(`CASSANDRA_HOSTS: invalid contact point "${point}" (expected host or host:port)`);
      }
    }
  }
  if (contactPoints.length === 0) return null;
  const dc = env['CASSANDRA_LOCAL_DC']?.trim();
  return { contactPoints, localDataCenter: dc ? dc : CASSANDRA_DEFAULT_DC };
}

/** Finds the workspace root (the folder holding tools/infra/cassandra/pom.xml). */
function findRepoRoot(): string {
  for (const start of [__dirname, process.cwd()]) {
    let dir = path.resolve(start);
    for (;;) {
      if (fs.existsSync(path.join(dir, 'tools', 'infra', 'cassandra', 'pom.xml'))) return dir;
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  throw new CassandraUnavailableError(
    `cannot find tools/infra/cassandra/pom.xml above ${__dirname} or ${process.cwd()}`,
  );
}

function resolveVersion(version: string | undefined): string {
  const v = version ?? process.env['CASSANDRA_VERSION'] ?? CASSANDRA_DEFAULT_VERSION;
  if (!/^\d+\.\d+\.\d+$/.test(v)) throw new Error(`invalid Cassandra version "${v}" (expected e.g. 5.0.9)`);
  return v;
}

function defaultCacheDir(): string {
  return process.env['CASSANDRA_CACHE_DIR'] ?? path.join(findRepoRoot(), '.cache', 'cassandra');
}

function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}

function lastLines(text: string, n: number): string {
  const lines = stripAnsi(text).split('\n');
  while (lines.length > 0 && lines[lines.length - 1]?.trim() === '') lines.pop();
  return lines.slice(-n).join('\n');
}

function isCompleteCache(versionDir: string, version: string): boolean {
  const marker = path.join(versionDir, MARKER_FILE);
  if (!fs.existsSync(marker)) return false;
  return fs.existsSync(path.join(versionDir, 'lib', `cassandra-all-${version}.jar`));
}

/**
 * Makes sure the jars of Cassandra `version` are in the cache and returns the folder holding them.
 *
 * The first call runs `mvn dependency:copy-dependencies` (network: Maven Central, or whatever
 * `~/.m2/settings.xml` mirrors) into a private temporary folder that is renamed into place and
 * marked complete only when Maven succeeded, so an interrupted or concurrent fetch never leaves a
 * half-filled cache. Later calls only check the marker and do not touch the network.
 *
 * @throws CassandraUnavailableError when `mvn` is not installed
 * @throws CassandraFetchError when Maven fails (its output tail is in the message)
 */
export async function ensureCassandraArtifacts(opts?: {
  version?: string;
  cacheDir?: string;
  log?: (line: string) => void;
  /** The download's progress line on stderr (default `auto`: rewritten on a terminal, a line every 10 s otherwise). */
  progress?: ProgressMode;
}): Promise<{ version: string; classpathDir: string }> {
  const version = resolveVersion(opts?.version);
  const log = opts?.log ?? defaultLog;
  const cacheDir = path.resolve(opts?.cacheDir ?? defaultCacheDir());
  const versionDir = path.join(cacheDir, version);
  const classpathDir = path.join(versionDir, 'lib');
  if (isCompleteCache(versionDir, version)) return { version, classpathDir };

  const mvn = process.env['MVN'] ?? 'mvn';
  const pom = path.join(findRepoRoot(), 'tools', 'infra', 'cassandra', 'pom.xml');
  fs.mkdirSync(cacheDir, { recursive: true });
  const tmpDir = path.join(cacheDir, `.tmp-${version}-${process.pid}-${randomBytes(4).toString('hex')}`);
  const tmpLib = path.join(tmpDir, 'lib');
  fs.mkdirSync(tmpLib, { recursive: true });
  log(`cassandra: fetching ${version} and its dependencies through Maven into ${versionDir} ...`);
  const started = Date.now();
  try {
    // Not quiet: Maven's "Downloaded from" lines drive the progress line (artifacts and bytes so far).
    const args = [
      '-B',
      '-f',
      pom,
      `-Dcassandra.version=${version}`,
      'dependency:copy-dependencies',
      `-DoutputDirectory=${tmpLib}`,
      '-DincludeScope=runtime',
    ];
    const progress = new ProgressLine(process.stderr, opts?.progress ?? 'auto');
    const fetched = { artifacts: 0, bytes: 0 };
    const show = () =>
      progress.update(
        `cassandra: fetching ${version} through Maven: ${fetched.artifacts} artifacts, ${(fetched.bytes / 1e6).toFixed(1)} MB, ${shortDuration(Date.now() - started)}`,
      );
    const { code, output, spawnError } = await runCollect(mvn, args, tmpDir, (line) => {
      const d = mavenDownload(line);
      if (!d) return;
      fetched.artifacts++;
      fetched.bytes += d.bytes;
      show();
    });
    if (fetched.artifacts > 0) progress.done(`cassandra: downloaded ${fetched.artifacts} artifacts, ${(fetched.bytes / 1e6).toFixed(1)} MB`);
    if (spawnError !== undefined) {
      const missing = (spawnError as NodeJS.ErrnoException).code === 'ENOENT';
      const msg = missing
        ? `Maven ("${mvn}") is not installed; it is needed to fetch Apache Cassandra ${version}`
        : `cannot run Maven ("${mvn}")`;
      throw missing
        ? new CassandraUnavailableError(msg, { cause: spawnError })
        : new CassandraFetchError(msg, { cause: spawnError });
    }
    if (code !== 0) {
      throw new CassandraFetchError(
        `mvn ${args.join(' ')} exited with ${code}; last output:\n${lastLines(output, LOG_TAIL_LINES)}`,
      );
    }
    if (!fs.existsSync(path.join(tmpLib, `cassandra-all-${version}.jar`))) {
      throw new CassandraFetchError(`Maven succeeded but cassandra-all-${version}.jar is not in ${tmpLib}`);
    }
    const jars = fs.readdirSync(tmpLib).filter((f) => f.endsWith('.jar'));
    fs.writeFileSync(
      path.join(tmpDir, MARKER_FILE),
      JSON.stringify({ version, jars: jars.length, fetchedAt: new Date().toISOString() }, null, 2),
    );
    publishCache(tmpDir, versionDir, version);
    log(
      `cassandra: fetched ${jars.length} jars for ${version} in ${((Date.now() - started) / 1000).toFixed(1)}s`,
    );
    return { version, classpathDir };
  } finally {
    fs.rmSync(tmpDir, { recursive: true, force: true });
  }
}

/** Moves a completed download into place; a concurrent winner's complete copy is kept. */
function publishCache(tmpDir: string, versionDir: string, version: string): void {
  if (fs.existsSync(versionDir)) {
    if (isCompleteCache(versionDir, version)) return;
    // A folder without marker is left over from an older layout or a manual copy: replace it.
    fs.rmSync(versionDir, { recursive: true, force: true });
  }
  try {
    fs.renameSync(tmpDir, versionDir);
  } catch (err) {
    // Another process renamed its copy in between; theirs is as good as ours.
    if (isCompleteCache(versionDir, version)) return;
    throw new CassandraFetchError(`cannot move ${tmpDir} to ${versionDir}`, { cause: err });
  }
}

const UNIT_BYTES: Readonly<Record<string, number>> = { B: 1, kB: 1e3, KB: 1e3, MB: 1e6, GB: 1e9 };

/** A Maven `Downloaded from <repo>: <url> (<size> <unit> at ...)` line: the artifact's URL and size, or undefined. */
export function mavenDownload(line: string): { url: string; bytes: number } | undefined {
  const m = /Downloaded from [^:]+: (\S+) \(([\d.,]+) (B|kB|KB|MB|GB)\b/.exec(line);
  if (!m) return undefined;
  return { url: m[1] as string, bytes: Number((m[2] as string).replace(/,/g, '')) * (UNIT_BYTES[m[3] as string] ?? 1) };
}

function runCollect(
  cmd: string,
  args: string[],
  cwd: string,
  onLine?: (line: string) => void,
): Promise<{ code: number | null; output: string; spawnError?: Error }> {
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    // One partial-line buffer per stream, so stdout and stderr lines never mix.
    const collector = () => {
      let partial = '';
      return (chunk: Buffer): void => {
        const text = chunk.toString('utf8');
        if (onLine) {
          const lines = (partial + text).split('\n');
          partial = lines.pop() ?? '';
          for (const l of lines) onLine(l);
        }
        output += text;
        // The cap keeps the tail (the error report) of a long download log.
        if (output.length > 1_000_000) output = output.slice(-500_000);
      };
    };
    child.stdout.on('data', collector());
    child.stderr.on('data', collector());
    child.on('error', (err) => resolve({ code: null, output, spawnError: err }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** Locates a JDK 17 `java` ($JAVA_HOME first, then PATH). */
function findJava(): string {
  const javaHome = process.env['JAVA_HOME'];
  const candidates: string[] = [];
  if (javaHome) candidates.push(path.join(javaHome, 'bin', 'java'));
  candidates.push('java');
  const problems: string[] = [];
  for (const java of candidates) {
    const res = spawnSync(java, ['-version'], { encoding: 'utf8' });
    if (res.error) {
      problems.push(`${java}: ${res.error.message}`);
      continue;
    }
    const m = /version "(\d+)(?:\.(\d+))?/.exec(`${res.stderr}${res.stdout}`);
    const major = m ? (m[1] === '1' ? Number(m[2]) : Number(m[1])) : NaN;
    if (major === REQUIRED_JAVA_MAJOR) return java;
    problems.push(`${java}: Java ${Number.isNaN(major) ? 'version unknown' : major}`);
  }
  throw new CassandraUnavailableError(
    `Apache Cassandra 5.0 needs JDK ${REQUIRED_JAVA_MAJOR} ($JAVA_HOME or java on PATH); found: ${problems.join('; ')}`,
  );
}

/**
 * Tools Cassandra needs that are missing, checked synchronously (for `describe.skip` decisions):
 * `java` (JDK 17), and `mvn` unless the artifacts of `version` are already cached.
 * Empty when a node can be started.
 */
export function cassandraMissingPrerequisites(opts?: { version?: string; cacheDir?: string }): string[] {
  const missing: string[] = [];
  try {
    findJava();
  } catch (err) {
    missing.push(err instanceof Error ? err.message : String(err));
  }
  const version = resolveVersion(opts?.version);
  let cached = false;
  try {
    cached = isCompleteCache(path.join(path.resolve(opts?.cacheDir ?? defaultCacheDir()), version), version);
  } catch (err) {
    missing.push(err instanceof Error ? err.message : String(err));
  }
  if (!cached) {
    const mvn = process.env['MVN'] ?? 'mvn';
    const res = spawnSync(mvn, ['-v'], { encoding: 'utf8' });
    if (res.error || res.status !== 0)
      missing.push(`Maven ("${mvn}") is needed to fetch Apache Cassandra ${version}`);
  }
  return missing;
}

function readJvmOptions(file: string): string[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('-'))
    .flatMap((l) => l.split(/\s+/));
}

async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

function yamlString(s: string): string {
  return JSON.stringify(s);
}

/**
 * CQL over TLS with the PKI's server keystore, optional: the same port also serves plaintext
 * clients, so one node serves suites with and without TLS. Client certificates are required only
 * with a truststore (`requireClientCertificates`): Cassandra 5.0 requires them of every TLS client
 * or of none, so the run's shared node does not.
 */
function renderClientEncryption(tls: TestPki | undefined, truststore?: string): string {
  if (!tls) return '';
  // With a truststore (the PKI's CA): every TLS client must present a certificate it signed.
  const clientAuth = truststore
    ? `  require_client_auth: true
  truststore: ${yamlString(truststore)}
  truststore_password: ${yamlString(tls.keystorePassword)}
`
    : `  require_client_auth: false
`;
  return `client_encryption_options:
  enabled: true
  optional: true
  keystore: ${yamlString(tls.serverKeystore)}
  keystore_password: ${yamlString(tls.keystorePassword)}
  store_type: PKCS12
${clientAuth}`;
}

/** A PKCS#12 truststore holding the PKI's CA, made with the JDK's keytool (beside `java`, else on PATH). */
function makeTruststore(java: string, tls: TestPki, file: string): string {
  const beside = path.join(path.dirname(java), 'keytool');
  const keytool = path.isAbsolute(java) && fs.existsSync(beside) ? beside : 'keytool';
  const res = spawnSync(keytool, ['-importcert', '-noprompt', '-alias', 'ca', '-file', tls.caCert, '-keystore', file, '-storetype', 'PKCS12', '-storepass', tls.keystorePassword], { encoding: 'utf8' });
  if (res.error || res.status !== 0) throw new CassandraUnavailableError(`keytool could not make a truststore: ${res.error?.message ?? res.stderr.trim()}`);
  return file;
}

/** Single-node configuration: loopback only, no auth, small caches, generous timeouts for loaded CI. */
function renderYaml(dir: string, nativePort: number, storagePort: number, tls?: TestPki, truststore?: string): string {
  const d = (sub: string): string => yamlString(path.join(dir, sub));
  return `# Generated by tools/infra/src/cassandra.ts for one test run; deleted with this folder.
cluster_name: defender-test
num_tokens: 1
initial_token: 0
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
auto_bootstrap: false
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:${storagePort}"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: ${storagePort}
native_transport_port: ${nativePort}
start_native_transport: true
endpoint_snitch: SimpleSnitch
dynamic_snitch: false
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
role_manager: CassandraRoleManager
network_authorizer: AllowAllNetworkAuthorizer
data_file_directories:
  - ${d('data')}
commitlog_directory: ${d('commitlog')}
saved_caches_directory: ${d('saved_caches')}
hints_directory: ${d('hints')}
cdc_raw_directory: ${d('cdc_raw')}
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 8MiB
memtable_heap_space: 64MiB
memtable_offheap_space: 64MiB
key_cache_size: 8MiB
counter_cache_size: 4MiB
concurrent_reads: 8
concurrent_writes: 8
concurrent_counter_writes: 8
concurrent_compactors: 1
hinted_handoff_enabled: false
# Every commit of a run is a lightweight transaction; Paxos v2 (Cassandra 4.1+) needs half the
# round trips of the default v1. Production clusters should set the same (k8s/README.md).
paxos_variant: v2
# Tests drop and truncate a lot; snapshots would only cost time and disk.
auto_snapshot: false
disk_failure_policy: stop
commit_failure_policy: stop
# Loaded 2-core CI machines pause for seconds (GC, JIT, other JVMs); defaults would time out.
read_request_timeout: 10000ms
range_request_timeout: 20000ms
write_request_timeout: 10000ms
counter_write_request_timeout: 10000ms
cas_contention_timeout: 5000ms
truncate_request_timeout: 60000ms
request_timeout: 20000ms
${renderClientEncryption(tls, truststore)}`;
}

function tailFile(file: string, n: number): string {
  try {
    return lastLines(fs.readFileSync(file, 'utf8'), n);
  } catch (err) {
    return `(cannot read ${file}: ${err instanceof Error ? err.message : String(err)})`;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function tcpOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/** Connects with cassandra-driver and reads `release_version`; always shuts the client down. */
async function queryReleaseVersion(contactPoints: string[], localDataCenter: string): Promise<string> {
  const client = new Client({
    contactPoints,
    localDataCenter,
    socketOptions: { connectTimeout: 5000, readTimeout: 15000 },
  });
  try {
    await client.connect();
    const rs = await client.execute('SELECT release_version FROM system.local');
    const v: unknown = rs.first()?.get('release_version');
    if (typeof v !== 'string') throw new Error('system.local has no release_version');
    return v;
  } finally {
    await client.shutdown();
  }
}

/**
 * A tiny detached process that kills the JVM and removes its folder when our process disappears
 * without calling stop() (crashed or SIGKILLed jest worker), so no orphan keeps ports and disk.
 */
const WATCHDOG_SOURCE = `
const [parentPid, javaPid, dir] = [Number(process.argv[1]), Number(process.argv[2]), process.argv[3]];
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
const cleanup = () => {
  try { require('fs').rmSync(dir, { recursive: true, force: true }); }
  catch (e) { process.stderr.write('cassandra watchdog: cannot remove ' + dir + ': ' + e.message + '\\n'); }
  process.exit(0);
};
// Detached, so Ctrl-C does not reach it; should a signal arrive anyway, it must still clean up.
process.on('SIGINT', () => undefined);
process.on('SIGHUP', () => undefined);
let killedAt = 0;
setInterval(() => {
  const parentAlive = alive(parentPid);
  // A JVM that died on its own is the parent's business (it quotes the log, then removes the folder).
  if (!alive(javaPid)) return parentAlive && killedAt === 0 ? process.exit(0) : cleanup();
  if (killedAt === 0 && !parentAlive) {
    killedAt = Date.now();
    try { process.kill(javaPid, 'SIGKILL'); } catch (e) { if (e.code !== 'ESRCH') throw e; }
  }
  if (killedAt !== 0 && Date.now() - killedAt > 30000) process.exit(1);
}, 1000);
`;

function startWatchdog(javaPid: number, dir: string): ChildProcess | null {
  try {
    const wd = spawn(process.execPath, ['-e', WATCHDOG_SOURCE, String(process.pid), String(javaPid), dir], {
      detached: true,
      stdio: 'ignore',
    });
    wd.on('error', (err) => defaultLog(`cassandra: watchdog failed: ${err.message}`));
    wd.unref();
    return wd;
  } catch (err) {
    defaultLog(`cassandra: cannot start watchdog (orphans possible if this process crashes): ${String(err)}`);
    return null;
  }
}

interface NodeAttempt {
  child: ChildProcess;
  watchdog: ChildProcess | null;
  dir: string;
  logFile: string;
  exited: Promise<number | null | string>;
  onProcessExit: () => void;
}

async function stopAttempt(a: NodeAttempt, timeoutMs: number): Promise<void> {
  const stillRunning = a.child.exitCode === null && a.child.signalCode === null;
  if (stillRunning) {
    a.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      a.exited.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    // A pending timer would keep jest (and the CLI) alive for the whole timeout.
    clearTimeout(timer);
    if (timedOut) {
      a.child.kill('SIGKILL');
      await a.exited;
    }
  }
  process.removeListener('exit', a.onProcessExit);
  if (a.watchdog && a.watchdog.exitCode === null) a.watchdog.kill('SIGTERM');
  await fs.promises.rm(a.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}

/**
 * Starts a private single-node Cassandra (or returns the external cluster of `CASSANDRA_HOSTS`).
 *
 * Fetches the artifacts if needed, picks free loopback ports, writes the configuration into a
 * fresh temporary folder, spawns `java` (JDK 17) and resolves once CQL answers
 * `SELECT release_version FROM system.local` through cassandra-driver. The JVM is killed when this
 * process exits, and a detached watchdog kills it if this process is killed outright.
 *
 * @param opts.heapMb JVM heap (-Xms = -Xmx) in MiB; default 512, or `CASSANDRA_HEAP_MB`.
 * @param opts.startTimeoutMs time allowed from spawning java to the first CQL answer (default 180 000).
 * @param opts.env environment read for `CASSANDRA_HOSTS` (default process.env; pass `{}` to force a private node).
 * @param opts.tls a PKI ({@link makeTestPki}): CQL over TLS as well as plaintext on the same port.
 * @param opts.requireClientCertificates with `tls`: TLS clients must present a certificate the PKI's CA signed.
 * @throws CassandraUnavailableError when java 17 or mvn is missing
 * @throws CassandraFetchError when the jars cannot be fetched
 * @throws CassandraStartError when the node dies or does not answer in time (message ends with its log tail)
 */
export async function startCassandra(opts?: {
  version?: string;
  cacheDir?: string;
  heapMb?: number;
  startTimeoutMs?: number;
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Also serve CQL over TLS on the same port with this PKI's server keystore (ignored for an external cluster). */
  tls?: TestPki;
  /** With `tls`: TLS clients must present a certificate signed by the PKI's CA (plaintext is still served). */
  requireClientCertificates?: boolean;
}): Promise<CassandraHandle> {
  const log = opts?.log ?? defaultLog;
  const startTimeoutMs = opts?.startTimeoutMs ?? 180_000;

  const external = cassandraFromEnv(opts?.env ?? process.env);
  if (external) {
    const version = await waitForCql(
      external.contactPoints,
      external.localDataCenter,
      startTimeoutMs,
      () => null,
    );
    log(`cassandra: using external cluster ${external.contactPoints.join(',')} (${version})`);
    return {
      ...external,
      version,
      external: true,
      logFile: null,
      pid: null,
      stop: () => Promise.resolve(),
    };
  }

  const java = findJava();
  const { version, classpathDir } = await ensureCassandraArtifacts({
    version: opts?.version,
    cacheDir: opts?.cacheDir,
    log,
  });
  const heapMb = opts?.heapMb ?? Number(process.env['CASSANDRA_HEAP_MB'] ?? 512);
  if (!Number.isInteger(heapMb) || heapMb < 256)
    throw new Error(`invalid Cassandra heap ${heapMb} MiB (min 256)`);

  // A port picked free can be taken by someone else before the JVM binds it; retry with new ones.
  const maxAttempts = 3;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNode({ java, version, classpathDir, heapMb, startTimeoutMs, log, tls: opts?.tls, requireClientCertificates: opts?.requireClientCertificates });
    } catch (err) {
      if (attempt < maxAttempts && err instanceof PortInUseError) {
        log(`cassandra: ${err.message}; retrying with other ports`);
        continue;
      }
      throw err;
    }
  }
}

class PortInUseError extends CassandraStartError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PortInUseError';
  }
}

async function waitForCql(
  contactPoints: string[],
  localDataCenter: string,
  timeoutMs: number,
  deadReason: () => string | null,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = undefined;
  const [host, portStr] = (contactPoints[0] ?? '').split(':');
  const port = Number(portStr ?? 9042);
  for (;;) {
    const dead = deadReason();
    if (dead !== null) throw new CassandraStartError(dead, { cause: lastError });
    // Probing the port first avoids spinning up a driver client every half second while the JVM boots.
    if (contactPoints.length > 1 || Number.isNaN(port) || (await tcpOpen(host ?? '127.0.0.1', port))) {
      try {
        return await queryReleaseVersion(contactPoints, localDataCenter);
      } catch (err) {
        lastError = err;
      }
    }
    if (Date.now() >= deadline) {
      const why = lastError instanceof Error ? `: ${lastError.message}` : ' (port never opened)';
      throw new CassandraStartError(
        `Cassandra at ${contactPoints.join(',')} did not answer CQL within ${Math.round(timeoutMs / 1000)}s${why}`,
        { cause: lastError },
      );
    }
    await sleep(500);
  }
}

async function startNode(p: {
  java: string;
  version: string;
  classpathDir: string;
  heapMb: number;
  startTimeoutMs: number;
  log: LogFn;
  tls?: TestPki;
  requireClientCertificates?: boolean;
}): Promise<CassandraHandle> {
  const repoRoot = findRepoRoot();
  const harnessDir = path.join(repoRoot, 'tools', 'infra', 'cassandra');
  const [nativePort, storagePort] = (await distinctFreePorts(2)) as [number, number];
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'defender-cassandra-'));
  for (const sub of ['conf', 'data', 'commitlog', 'saved_caches', 'hints', 'cdc_raw', 'triggers', 'logs']) {
    fs.mkdirSync(path.join(dir, sub));
  }
  const yamlFile = path.join(dir, 'conf', 'cassandra.yaml');
  const truststore = p.tls && p.requireClientCertificates ? makeTruststore(p.java, p.tls, path.join(dir, 'conf', 'truststore.p12')) : undefined;
  fs.writeFileSync(yamlFile, renderYaml(dir, nativePort, storagePort, p.tls, truststore));
  const logFile = path.join(dir, 'cassandra.log');

  const jamm = fs.readdirSync(p.classpathDir).find((f) => /^jamm-.*\.jar$/.test(f));
  const args = [
    ...readJvmOptions(path.join(harnessDir, 'jvm17.options')),
    `-Xms${p.heapMb}m`,
    `-Xmx${p.heapMb}m`,
    // bin/cassandra loads jamm as an agent so memtable sizes are measured, not guessed.
    ...(jamm ? [`-javaagent:${path.join(p.classpathDir, jamm)}`] : []),
    `-Dcassandra.config=${pathToFileURL(yamlFile).href}`,
    `-Dlogback.configurationFile=${path.join(harnessDir, 'logback.xml')}`,
    `-Dcassandra.logdir=${path.join(dir, 'logs')}`,
    `-Dcassandra.storagedir=${dir}`,
    `-Dcassandra.triggers_dir=${path.join(dir, 'triggers')}`,
    '-Dcassandra-foreground=yes',
    // Single fresh node: nothing to gossip with, nothing to wait for.
    '-Dcassandra.skip_wait_for_gossip_to_settle=0',
    '-Dcassandra.ring_delay_ms=1000',
    '-Dcassandra.load_ring_state=false',
    '-Dcassandra.superuser_setup_delay_ms=0',
    // JMX stays off (no cassandra.jmx.*.port): nothing in the tests needs nodetool.
    '-cp',
    path.join(p.classpathDir, '*'),
    'org.apache.cassandra.service.CassandraDaemon',
  ];

  p.log(
    `cassandra: starting ${p.version} (heap ${p.heapMb} MiB) on 127.0.0.1:${nativePort}${p.tls ? ` (plaintext and TLS${p.requireClientCertificates ? ' with client certificates' : ''})` : ''} (storage ${storagePort}), log ${logFile}`,
  );
  const started = Date.now();
  const fd = fs.openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(p.java, args, { cwd: dir, stdio: ['ignore', fd, fd], detached: false });
  } finally {
    fs.closeSync(fd);
  }
  let exitInfo: string | null = null;
  const exited = new Promise<number | null | string>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = signal ? `signal ${signal}` : `code ${code}`;
      resolve(code ?? signal);
    });
    child.once('error', (err) => {
      exitInfo = `spawn error: ${err.message}`;
      resolve(err.message);
    });
  });
  // Our JVM must not outlive us, whatever the test runner does.
  const onProcessExit = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', onProcessExit);
  child.unref();
  const watchdog = child.pid !== undefined ? startWatchdog(child.pid, dir) : null;
  const attempt: NodeAttempt = { child, watchdog, dir, logFile, exited, onProcessExit };
  const contactPoints = [`127.0.0.1:${nativePort}`];

  let version: string;
  try {
    version = await waitForCql(contactPoints, CASSANDRA_DEFAULT_DC, p.startTimeoutMs, () =>
      exitInfo === null ? null : `Cassandra exited while starting (${exitInfo})`,
    );
  } catch (err) {
    const tail = tailFile(logFile, LOG_TAIL_LINES);
    await stopAttempt(attempt, 5_000).catch((stopErr: unknown) =>
      p.log(`cassandra: cleanup after failed start failed: ${String(stopErr)}`),
    );
    const msg = `${err instanceof Error ? err.message : String(err)}\n--- last ${LOG_TAIL_LINES} lines of ${logFile} ---\n${tail}`;
    if (/Address already in use|Failed to bind port|BindException/i.test(tail)) {
      throw new PortInUseError(
        `port ${nativePort} or ${storagePort} was taken before Cassandra bound it: ${msg}`,
        {
          cause: err,
        },
      );
    }
    throw new CassandraStartError(msg, { cause: err });
  }
  p.log(
    `cassandra: ${version} answers CQL at ${contactPoints[0]} after ${((Date.now() - started) / 1000).toFixed(1)}s (pid ${child.pid})`,
  );

  let stopping: Promise<void> | null = null;
  return {
    contactPoints,
    localDataCenter: CASSANDRA_DEFAULT_DC,
    version,
    external: false,
    ...(p.tls ? { tls: p.tls } : {}),
    logFile,
    pid: child.pid ?? null,
    stop(): Promise<void> {
      stopping ??= (async () => {
        const t0 = Date.now();
        await stopAttempt(attempt, 15_000);
        p.log(`cassandra: stopped ${contactPoints[0]} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
      })();
      return stopping;
    },
  };
}
