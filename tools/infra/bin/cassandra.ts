/**
 * Cassandra for the test harness, by hand.
 *
 *   node -r @swc-node/register tools/infra/bin/cassandra.ts fetch [--version 5.0.9]
 *     fetches the jars into .cache/cassandra/<version>/ (CI pre-warm; no-op when cached)
 *   node -r @swc-node/register tools/infra/bin/cassandra.ts start [--version 5.0.9] [--heap-mb 512]
 *     runs a private single node in the foreground until Ctrl-C / SIGTERM, then stops it cleanly
 *
 * Exit codes: 0 ok, 1 failure, 2 usage, 3 java/mvn missing.
 */
import { existsSync, readFileSync } from 'node:fs';
import { CassandraUnavailableError, ensureCassandraArtifacts, startCassandra } from '../src/cassandra';

const USAGE = 'usage: cassandra.ts <fetch|start> [--version X.Y.Z] [--heap-mb N]';

function parseArgs(argv: string[]): { command: string; version?: string; heapMb?: number } {
  const [command, ...rest] = argv;
  if (command !== 'fetch' && command !== 'start') throw new UsageError(USAGE);
  const out: { command: string; version?: string; heapMb?: number } = { command };
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    const value = rest[i + 1];
    if (value === undefined) throw new UsageError(`${flag} needs a value\n${USAGE}`);
    if (flag === '--version') out.version = value;
    else if (flag === '--heap-mb') out.heapMb = Number(value);
    else throw new UsageError(`unknown option ${flag}\n${USAGE}`);
    i++;
  }
  return out;
}

class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
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
  const args = parseArgs(process.argv.slice(2));
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

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(err instanceof CassandraUnavailableError ? 3 : 1);
  },
);
