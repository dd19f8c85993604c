// The command line of the bench scripts whose parameters are environment variables: they take
// -h/--help only, so `npm run bench:x -- --help` prints the usage instead of running the bench (minutes,
// and a rewritten docs/benchmarks.md), and any other argument is an error rather than silently ignored.
import { parseArgs } from 'node:util';

/**
 * 'help' for -h/--help, 'run' for no arguments.
 * @throws parseArgs' error for anything else (an unknown option, a positional argument).
 */
export function benchArgs(argv: readonly string[]): 'help' | 'run' {
  const { values } = parseArgs({
    args: [...argv],
    options: { help: { type: 'boolean', short: 'h' } },
    strict: true,
    allowPositionals: false,
  });
  return values.help ? 'help' : 'run';
}

/**
 * A bench's first statement: on -h/--help prints `usage` and exits 0; on any other argument prints the
 * error and `usage` to stderr and exits 2; without arguments returns, and the bench runs.
 */
export function handleBenchCommandLine(usage: string, argv: readonly string[] = process.argv.slice(2)): void {
  let what: 'help' | 'run';
  try {
    what = benchArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${usage}`);
    process.exit(2);
  }
  if (what === 'help') {
    process.stdout.write(usage);
    process.exit(0);
  }
}

/**
 * An integer bench parameter from the environment: `fallback` when unset or empty.
 * @throws Error naming the variable when it is not an integer >= `min`.
 */
export function envInt(name: string, fallback: number, min = 0, env: NodeJS.ProcessEnv = process.env): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got ${v}`);
  return n;
}
