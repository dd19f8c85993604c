/**
 * The README's test command (`npm cit` runs `npm ci`, then this through `npm test`):
 * starts the real servers once for the whole run, then builds and tests every project with Nx while
 * the whole workspace is type-checked and linted beside it (`npm run typecheck`, typecheck-all.ts: the
 * projects' typecheck tsconfigs in four programs, not 59; `npm run lint`: one ESLint over apps, libs
 * and tools with the root config every project's lint target uses, not 29 processes).
 *
 * - nats-server: each Jest project starts its own private server (cheap), run as production runs it
 *   (TLS from a throwaway CA, one user per app role; tools/infra global-setup.ts); here we only make
 *   sure the binary exists (Debian's package is installed when missing and we are root).
 * - Cassandra: started once here (Maven Central artifacts, cached in .cache/) and handed to every
 *   project through CASSANDRA_HOSTS, unless CASSANDRA_HOSTS is already set.
 *
 * REQUIRE_INFRA=1 (CI) turns a server that cannot be started into a failure instead of a skip.
 * Extra arguments are passed to `nx run-many` (e.g. `npm test -- -p store`).
 */
import { spawn } from 'node:child_process';
import { MAX_FAILURE_LINES, watchLines } from './test-failures';
import { join } from 'node:path';
import { banner, cassandraFromEnv, CassandraHandle, ensureNatsServer, INFRA_ENV, infraRequired, makeTestPki, natsServerVersion, removeTestPki, startCassandra, type TestPki } from '@defender/infra-harness';

const REPO = join(__dirname, '..', '..');

function log(line: string): void {
  process.stderr.write(`[test-all] ${line}\n`);
}

/** Runs a command (in `cwd`, its lines prefixed with `prefix`), recording its failure lines in `failures`. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, failures: string[], cwd = REPO, prefix = ''): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['inherit', 'pipe', 'pipe'] });
    watchLines(child.stdout, process.stdout, failures, prefix);
    watchLines(child.stderr, process.stderr, failures, prefix);
    const forward = (sig: NodeJS.Signals) => child.kill(sig);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.on('close', (code, signal) => {
      process.removeListener('SIGINT', forward);
      process.removeListener('SIGTERM', forward);
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

/** Runs a command with its output kept (stdout and stderr, in order) and handed over at the end. */
function runBuffered(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), output }));
  });
}

/** `npm run typecheck` then `npm run lint`, each with its output kept. */
async function checkWorkspace(env: NodeJS.ProcessEnv): Promise<{ name: string; code: number; output: string }[]> {
  const typecheck = await runBuffered(process.execPath, ['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, 'tools/scripts/typecheck-all.ts')], env);
  const lint = await runBuffered(join(REPO, 'node_modules', '.bin', 'eslint'), LINT_PATHS, env);
  return [
    { name: 'typecheck', ...typecheck },
    { name: 'lint', ...lint },
  ];
}

/**
 * The whole suite: every build first, then the chaos scenarios (the longest single task, ~5 min of
 * scenarios one after the other) from the start of the test phase beside every other project's tests.
 * Under `nx run-many -t build test` Nx started chaos last, and the run ended with it alone on the
 * machine for minutes (issue 47: CI time). Chaos runs as its Nx target does (`jest` in its directory,
 * `--runInBand`), in its own process: two Nx processes in one workspace share its task database.
 */
async function buildThenTest(nx: string, args: string[], env: NodeJS.ProcessEnv, failures: string[]): Promise<number> {
  const built = await run(nx, ['run-many', '-t', 'build', '--output-style=stream', '--parallel=2', ...args], env, failures);
  if (built !== 0) return built;
  const chaos = run(join(REPO, 'node_modules', '.bin', 'jest'), ['--runInBand'], env, failures, join(REPO, 'tools', 'chaos'), 'chaos: ');
  const rest = run(nx, ['run-many', '-t', 'test', '--exclude=chaos', '--excludeTaskDependencies', '--output-style=stream', '--parallel=2', ...args], env, failures);
  const codes = await Promise.all([rest, chaos]);
  return codes.find((c) => c !== 0) ?? 0;
}

/** What `npm run lint` lints: every project lives under these (each project's lint target is `eslint .` in it). */
const LINT_PATHS = ['apps', 'libs', 'tools'];

const USAGE = `Usage: npm test [-- <nx run-many options>]

Builds and tests every project (nx run-many -t build test) while the workspace is type-checked and
linted beside it (npm run typecheck, npm run lint; with -p, those projects' own targets instead), with
nats-server checked and Cassandra started once for the whole run (CASSANDRA_HOSTS: use that cluster
instead). Options after -- go to nx run-many, e.g. \`npm test -- -p store\` for one project.
REQUIRE_INFRA=1 makes a server that cannot be started a failure instead of a skip.

  -h, --help  this text (nothing is started)
`;

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  const started = Date.now();
  const env: NodeJS.ProcessEnv = { ...process.env, NX_DAEMON: 'false', TZ: 'UTC', FORCE_COLOR: '0' };

  try {
    const bin = ensureNatsServer(log);
    log(`nats-server ${natsServerVersion(bin)} at ${bin}`);
  } catch (err) {
    if (infraRequired()) throw err;
    log(banner(`nats-server unavailable, NATS tests will be skipped: ${(err as Error).message}`));
  }

  let cassandra: CassandraHandle | undefined;
  let pki: TestPki | undefined;
  if (cassandraFromEnv()) {
    log(`using Cassandra at ${process.env['CASSANDRA_HOSTS']}`);
  } else {
    try {
      // As the Jest harness starts it (global-setup): TLS optional on the node, so the suites connect
      // in plaintext and the TLS tests (cassandra-tls) over TLS with this run's throwaway PKI.
      pki = makeTestPki();
      cassandra = await startCassandra({ log, tls: pki });
      env[INFRA_ENV.cassandraTlsPki] = JSON.stringify(pki);
      env['CASSANDRA_HOSTS'] = cassandra.contactPoints.join(',');
      env['CASSANDRA_LOCAL_DC'] = cassandra.localDataCenter;
      log(`Cassandra ${cassandra.version} up at ${env['CASSANDRA_HOSTS']} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    } catch (err) {
      if (pki) removeTestPki(pki);
      pki = undefined;
      if (infraRequired()) throw err;
      log(banner(`Cassandra unavailable, Cassandra tests will be skipped: ${(err as Error).message}`));
    }
  }

  const stop = async () => {
    await cassandra?.stop();
    if (pki) removeTestPki(pki);
    pki = undefined;
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  process.once('SIGTERM', () => void stop().then(() => process.exit(143)));

  try {
    const nx = join(REPO, 'node_modules', '.bin', 'nx');
    const failures: string[] = [];
    // Type-check, then lint, the whole workspace in one process each beside Nx (their output after
    // Nx's, not interleaved), unless the run is limited to some projects (`-p`), where their own
    // typecheck and lint targets run instead.
    const limited = args.some((a) => a === '-p' || a.startsWith('--projects') || a === '--exclude' || a.startsWith('--exclude='));
    const beside = limited ? undefined : checkWorkspace(env);
    let code = limited
      ? await run(nx, ['run-many', '-t', 'lint', 'typecheck', 'build', 'test', '--output-style=stream', '--parallel=2', ...args], env, failures)
      : await buildThenTest(nx, args, env, failures);
    for (const check of beside ? await beside : []) {
      process.stdout.write(check.output);
      if (check.code !== 0) {
        failures.push(`${check.name}: exit ${check.code} (npm run ${check.name})`);
        if (code === 0) code = check.code;
      }
    }
    if (failures.length > 0) {
      log(`failed tests (${failures.length} lines${failures.length > MAX_FAILURE_LINES ? `, the first ${MAX_FAILURE_LINES}` : ''}):`);
      for (const line of failures.slice(0, MAX_FAILURE_LINES)) log(`  ${line}`);
    }
    log(`finished with code ${code} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    return code;
  } finally {
    await stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
