/**
 * Cassandra for the test harness, by hand.
 *
 *   node -r ./tools/scripts/register.js tools/infra/bin/cassandra.ts fetch [--version 5.0.9]
 *     fetches the jars into .cache/cassandra/<version>/ (CI pre-warm; no-op when cached)
 *   node -r ./tools/scripts/register.js tools/infra/bin/cassandra.ts start [--version 5.0.9] [--heap-mb 512]
 *     runs a private single node in the foreground until Ctrl-C / SIGTERM, then stops it cleanly
 *
 * Exit codes: 0 ok, 1 failure, 2 usage, 3 java/mvn missing.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  CASSANDRA_DEFAULT_VERSION,
  CassandraUnavailableError,
  ensureCassandraArtifacts,
  startCassandra,
} from '../src/cassandra';

export const USAGE = `Usage: cassandra.ts <fetch|start> [options]
  (npm run infra:cassandra = start; npx nx run infra:fetch-cassandra = fetch)

Commands:
  fetch               fetch the jars into .cache/cassandra/<version>/ (CI pre-warm; no-op when cached)
  start               run a private single node in the foreground until Ctrl-C / SIGTERM, then stop it
                      cleanly; prints the CASSANDRA_HOSTS / CASSANDRA_LOCAL_DC to export

Options:
  --version X.Y.Z     Cassandra version (default CASSANDRA_VERSION, else ${CASSANDRA_DEFAULT_VERSION})
  --heap-mb N         the node's heap in MiB, at least 256 (start only; default CASSANDRA_HEAP_MB, else 512)
  -h, --help          this text

Exit codes: 0 ok, 1 failure, 2 usage, 3 java/mvn missing.
`;

/** A wrong command line: exit code 2 with the usage. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export type Invocation =
  | { readonly command: 'help' }
  | { readonly command: 'fetch' | 'start'; readonly version?: string; readonly heapMb?: number };

/** Parses the command line (without node and the script). @throws UsageError */
export function parseCommandLine(argv: readonly string[]): Invocation {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        version: { type: 'string' },
        'heap-mb': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
  const { values: v, positionals } = parsed;
  if (v.help) return { command: 'help' };
  const [command, ...extra] = positionals;
  if (command !== 'fetch' && command !== 'start')
    throw new UsageError(
      command === undefined
        ? 'a command is required: fetch or start'
        : `unknown command "${command}" (fetch or start)`,
    );
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const heapMb = v['heap-mb'] === undefined ? undefined : Number(v['heap-mb']);
  if (heapMb !== undefined && !(Number.isInteger(heapMb) && heapMb >= 256))
    throw new UsageError(`--heap-mb must be an integer >= 256, got "${v['heap-mb']}"`);
  if (heapMb !== undefined && command === 'fetch') throw new UsageError('--heap-mb applies to start only');
  return {
    command,
    ...(v.version !== undefined ? { version: v.version } : {}),
    ...(heapMb !== undefined ? { heapMb } : {}),
  };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

async function main(): Promise<number> {
  const args = parseCommandLine(process.argv.slice(2));
  if (args.command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.command === 'fetch') {
    const t0 = Date.now();
    const { version, classpathDir } = await ensureCassandraArtifacts({ version: args.version, log });
    log(`cassandra ${version}: jars in ${classpathDir} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
    return 0;
  }

  // `start` always runs a private node: CASSANDRA_HOSTS is what this command is for producing.
  const handle = await startCassandra({ version: args.version, heapMb: args.heapMb, log, env: {} });
  process.stdout.write(
    `Cassandra ${handle.version} is up. Contact point: ${handle.contactPoints.join(',')} (local DC ${handle.localDataCenter})\n` +
      `  export CASSANDRA_HOSTS=${handle.contactPoints.join(',')} CASSANDRA_LOCAL_DC=${handle.localDataCenter}\n` +
      `  log: ${handle.logFile}\n` +
      'Press Ctrl-C to stop.\n',
  );

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (why: string, code: number): void => {
      if (stopping) return;
      stopping = true;
      clearInterval(alive);
      log(`cassandra: ${why}, stopping ...`);
      handle.stop().then(
        () => resolve(code),
        (err: unknown) => {
          log(`cassandra: stop failed: ${err instanceof Error ? err.message : String(err)}`);
          resolve(1);
        },
      );
    };
    process.on('SIGINT', () => stop('SIGINT', 0));
    process.on('SIGTERM', () => stop('SIGTERM', 0));
    // The node may die on its own (OOM, disk); say so instead of pretending it is up.
    const pid = handle.pid;
    const alive = setInterval(() => {
      if (pid !== null && !isRunning(pid)) {
        // stop() removes the node folder, log included: show the log first.
        const tail =
          handle.logFile && existsSync(handle.logFile)
            ? readFileSync(handle.logFile, 'utf8').split('\n').slice(-41).join('\n')
            : '';
        log(`--- last lines of ${handle.logFile} ---\n${tail}`);
        stop(`the node (pid ${pid}) exited on its own`, 1);
      }
    }, 2000);
  });
}

if (require.main === module)
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      if (err instanceof UsageError) {
        process.stderr.write(`cassandra.ts: ${err.message}\n\n${USAGE}`);
        process.exit(2);
      }
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(err instanceof CassandraUnavailableError ? 3 : 1);
    },
  );
