import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const REPO = join(__dirname, '..', '..', '..');

/** A child process running one of the workspace's TypeScript entry points. */
export interface SpawnedApp {
  readonly child: ChildProcess;
  /** Everything written to stdout / stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a signal and waits for the exit (SIGKILL after `graceMs`). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs `entry` (a path relative to the repo root, e.g. `apps/defender/src/main.ts`) with plain
 * `node` and the workspace's TypeScript register hook, so a test exercises the real process:
 * environment parsing, exit codes, signals, ports. The environment is exactly `env` plus PATH.
 */
export function spawnTsApp(entry: string, env: Record<string, string>): SpawnedApp {
  return spawnNode(['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, entry)], env);
}

/**
 * Runs an app's built bundle (`dist/apps/<app>/main.js`, from `nx build <app>`): starts in a
 * fraction of the time of {@link spawnTsApp}, for tests that run many processes.
 */
export function spawnBuiltApp(app: string, env: Record<string, string>): SpawnedApp {
  const main = join(REPO, 'dist', 'apps', app, 'main.js');
  if (!existsSync(main)) throw new Error(`${main} not found: run \`npx nx build ${app}\` first`);
  return spawnNode(['--enable-source-maps', main], { ...imageRuntimeEnv(app), ...env });
}

/** An app build that Nx reported as failed. */
export class AppBuildError extends Error {
  override readonly name = 'AppBuildError';
}

/**
 * Builds the apps' bundles with Nx (`nx run-many -t build -p <apps>`), so a benchmark or a chaos run
 * starts the code of this checkout, never a missing or stale bundle. Nx's cache makes this a few
 * seconds when nothing changed. Nx's output goes to stderr (a bench's stdout stays its own).
 * @throws AppBuildError when the build fails (the exit code in the message, Nx's output above it)
 */
export function buildApps(apps: readonly string[]): void {
  const nx = join(REPO, 'node_modules', '.bin', 'nx');
  const r = spawnSync(nx, ['run-many', '-t', 'build', '-p', apps.join(','), '--output-style=static'], {
    cwd: REPO,
    env: { ...process.env, NX_DAEMON: 'false' },
    stdio: ['ignore', process.stderr, process.stderr],
  });
  if (r.error) throw new AppBuildError(`could not run ${nx}: ${r.error.message}`, { cause: r.error });
  if (r.status !== 0) throw new AppBuildError(`nx build of ${apps.join(', ')} failed (exit ${r.status ?? r.signal})`);
}

/**
 * Variables of the Node.js runtime and the C library rather than of the app, which an image may set
 * (`ENV K=V` in `apps/<app>/Dockerfile`): `NODE_OPTIONS` (the defender's V8 heap limits) and glibc's
 * malloc tunables (`MALLOC_*`): allowed on any workload by deploy-check.
 */
export const RUNTIME_ENV_PATTERN = /^(NODE_OPTIONS|MALLOC_[A-Z_]+)$/;

/**
 * The runtime environment an app's image sets ({@link RUNTIME_ENV_PATTERN}; one `ENV K=V` or
 * `ENV K="V"` per line), so that tests, benches and the local fab run a process as it is deployed.
 */
export function imageRuntimeEnv(app: string): Record<string, string> {
  const dockerfile = join(REPO, 'apps', app, 'Dockerfile');
  if (!existsSync(dockerfile)) return {};
  const env: Record<string, string> = {};
  for (const m of readFileSync(dockerfile, 'utf8').matchAll(/^ENV ([A-Z_]+)=("?)(.*)\2\s*$/gm)) {
    if (RUNTIME_ENV_PATTERN.test(m[1]!)) env[m[1]!] = m[3]!;
  }
  return env;
}

/** The `NODE_OPTIONS` an app's image sets (e.g. the defender's V8 heap cap); `undefined` when none. */
export function imageNodeOptions(app: string): string | undefined {
  return imageRuntimeEnv(app)['NODE_OPTIONS'];
}

/** The `--max-old-space-size` in MB of a `NODE_OPTIONS` value; `undefined` when it sets none. */
export function heapCapMb(nodeOptions: string | undefined): number | undefined {
  const m = /(?:^|\s)--max-old-space-size=(\d+)(?:\s|$)/.exec(nodeOptions ?? '');
  return m ? Number(m[1]) : undefined;
}

/**
 * The environment a process gets: an empty runtime variable ({@link RUNTIME_ENV_PATTERN}) is left
 * out, so a caller can take an image's setting away (`MALLOC_MMAP_THRESHOLD_: ''`) to measure without
 * it. glibc would read an empty `MALLOC_*` as 0, which no one means.
 */
export function processEnv(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = { PATH: process.env['PATH'] ?? '', NODE_ENV: 'test' };
  for (const [k, v] of Object.entries(env)) {
    if (v === '' && RUNTIME_ENV_PATTERN.test(k)) delete out[k];
    else out[k] = v;
  }
  return out;
}

function spawnNode(args: string[], env: Record<string, string>): SpawnedApp {
  const child = spawn(process.execPath, args, {
    cwd: REPO,
    env: processEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  void exited.then(() => process.removeListener('exit', killOnExit));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const res = await exited;
      clearTimeout(timer);
      return res;
    },
  };
}

/**
 * GETs `url` and returns status and parsed JSON (or text) body; network errors propagate, and so
 * does a response that takes longer than `timeoutMs` (a stalled process fails the test, not hangs it).
 */
export async function getJson(url: string, timeoutMs = 15_000): Promise<{ status: number; body: unknown; text: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
  }
  return { status: res.status, body, text };
}
