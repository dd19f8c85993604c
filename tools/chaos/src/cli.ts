import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
/**
 * Chaos runs outside Jest, on the apps' built bundles (built first by Nx: seconds when nothing changed).
 *
 *   npm run chaos -- soak [--seconds 600] [--seed 1]
 *   npm run chaos -- suite lifecycle|membership|control-plane|nats-cluster|partitions|all [--defaults] [--chambers N] [--scenarios a,b]
 *   npm run chaos -- render
 *   npm run chaos -- --help
 *
 * Reports go to docs/chaos/ (CHAOS_REPORT_DIR to change); the exit code is 1 when an invariant is violated.
 */
import { parseArgs } from 'node:util';
import { buildApps, ProgressLine, remainingMs, shortDuration } from '@defender/infra-harness';
import { rerenderReports, reportDir } from './lib/report';
import { ScenarioOutcome, Suite } from './lib/runner';
import { DEFAULT_SETTINGS } from './lib/settings';
import { DEFAULT_SOAK } from './lib/soak';
import { runSoak, startSuite, SUITES } from './lib/suites';

/** A wrong command line: reported without a stack trace, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const USAGE =
  'Usage: npm run chaos -- soak [--seconds N] [--seed N]\n' +
  '       npm run chaos -- suite <lifecycle|membership|control-plane|nats-cluster|partitions|all> [--defaults] [--chambers N] [--scenarios a,b]\n' +
  '       npm run chaos -- render\n' +
  '\n' +
  '  soak        random faults against one cluster for --seconds (default CHAOS_SOAK_SECONDS, else ' + `${DEFAULT_SOAK.seconds}), seeded by --seed (default ${DEFAULT_SOAK.seed})\n` +
  '  suite       the scenarios of one suite (default all), each against a fresh cluster\n' +
  '  render      rewrite every report\'s Markdown (tables, timeline picture) and the index from its JSON; runs nothing\n' +
  `  --defaults  the production intervals (heartbeat ${DEFAULT_SETTINGS.heartbeatSeconds} s, windows ${DEFAULT_SETTINGS.coldStartWindowSeconds}/${DEFAULT_SETTINGS.scaleWindowSeconds} s, election TTL ${DEFAULT_SETTINGS.electionTtlSeconds} s); reports get the suffix -defaults\n` +
  '  --chambers  the fab size of every suite run (default each suite\'s own, 32-48); reports get the suffix -<N>\n' +
  '  --scenarios only these scenarios of the suite (comma-separated ids, e.g. crash-single,planned-scale-up)\n' +
  '  -h, --help  this text\n' +
  '\n' +
  'Builds the apps first (nx build; seconds when nothing changed). Reports go to\n' +
  'docs/chaos/ (CHAOS_REPORT_DIR to change); exit code 1 when an invariant is violated, 2 for a wrong command line.\n';

export type Invocation =
  | { readonly command: 'help'; readonly exitCode: 0 | 2 }
  | { readonly command: 'soak'; readonly seconds: number; readonly seed: number }
  | {
      readonly command: 'suite';
      readonly suites: readonly string[];
      readonly defaults: boolean;
      /** Chambers instead of each suite's own (a GigaFab-size run). */
      readonly chambers?: number;
      /** Only these scenario ids. */
      readonly scenarios?: readonly string[];
    }
  | { readonly command: 'render' };

/** Parses the command line (without node and the script); `env` gives CHAOS_SOAK_SECONDS. @throws UsageError */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv): Invocation {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        seconds: { type: 'string' },
        seed: { type: 'string' },
        defaults: { type: 'boolean' },
        chambers: { type: 'string' },
        scenarios: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
  const { values, positionals } = parsed;
  const [command, arg, ...extra] = positionals;
  if (values.help || !command) return { command: 'help', exitCode: values.help ? 0 : 2 };
  if (command === 'soak') {
    if (arg !== undefined) throw new UsageError(`soak takes no arguments, got "${arg}"`);
    if (values.defaults || values.chambers !== undefined || values.scenarios !== undefined) throw new UsageError('--defaults, --chambers and --scenarios apply to suite only');
    const seconds = Number(values.seconds ?? env['CHAOS_SOAK_SECONDS'] ?? DEFAULT_SOAK.seconds);
    const seed = Number(values.seed ?? DEFAULT_SOAK.seed);
    if (!(seconds > 0) || !Number.isInteger(seed)) throw new UsageError('--seconds must be > 0 and --seed an integer');
    return { command, seconds, seed };
  }
  if (command === 'suite') {
    if (values.seconds !== undefined || values.seed !== undefined) throw new UsageError('--seconds and --seed apply to soak only');
    if (extra.length > 0) throw new UsageError(`suite takes one suite, got also "${extra[0]}"`);
    const names = SUITES.map((d) => d.name);
    if (arg !== undefined && arg !== 'all' && !names.includes(arg)) throw new UsageError(`unknown suite ${arg}; one of ${names.join(', ')}, all`);
    const suites = arg === undefined || arg === 'all' ? names : [arg];
    let chambers: number | undefined;
    if (values.chambers !== undefined) {
      chambers = Number(values.chambers);
      if (!Number.isInteger(chambers) || chambers < 8 || chambers > 50_000) throw new UsageError(`--chambers must be an integer from 8 to 50000, got "${values.chambers}"`);
    }
    let scenarios: string[] | undefined;
    if (values.scenarios !== undefined) {
      scenarios = values.scenarios.split(',').map((x) => x.trim()).filter((x) => x.length > 0);
      const known = new Set(SUITES.filter((d) => suites.includes(d.name)).flatMap((d) => d.scenarios.map((x) => x.id)));
      const unknown = scenarios.filter((x) => !known.has(x));
      if (scenarios.length === 0 || unknown.length > 0) throw new UsageError(`--scenarios: no scenario ${unknown.join(', ') || '(none given)'} in ${suites.join(', ')}`);
    }
    return { command, suites, defaults: values.defaults ?? false, ...(chambers !== undefined ? { chambers } : {}), ...(scenarios ? { scenarios } : {}) };
  }
  if (command === 'render') {
    if (arg !== undefined) throw new UsageError(`render takes no arguments, got "${arg}"`);
    if (values.seconds !== undefined || values.seed !== undefined || values.defaults || values.chambers !== undefined || values.scenarios !== undefined) throw new UsageError('render takes no options');
    return { command };
  }
  throw new UsageError(`unknown command ${command} (soak, suite or render)`);
}

/**
 * Writes each process's output so far (the apps log JSON lines; stderr after them) to
 * `CHAOS_LOG_DIR` (default tmp/chaos-logs)/<scenario>/; returns the directory. A suite's processes
 * live across its scenarios, so a scenario's files hold the earlier scenarios' output too.
 */
function saveLogs(suite: Suite, scenario: string): string {
  const dir = join(process.env['CHAOS_LOG_DIR'] ?? join(__dirname, '..', '..', '..', 'tmp', 'chaos-logs'), `${scenario}${suite.reportSuffix}`);
  mkdirSync(dir, { recursive: true });
  for (const p of suite.cluster.procs) {
    const err = p.app.stderr();
    writeFileSync(join(dir, `${p.name}.log`), err ? `${p.app.stdout()}\n--- stderr ---\n${err}` : p.app.stdout());
  }
  return dir;
}

function summary(o: ScenarioOutcome): string {
  const bad = o.report.invariants.filter((i) => !i.ok && i.blocking !== false);
  return `${o.report.id}: ${bad.length ? `VIOLATED ${bad.map((i) => i.id).join(', ')}` : 'invariants held'} (${o.report.durationSeconds.toFixed(0)} s)`;
}

async function main(argv: string[]): Promise<number> {
  const cli = parseCommandLine(argv, process.env);
  if (cli.command === 'help') {
    (cli.exitCode === 0 ? process.stdout : process.stderr).write(USAGE);
    return cli.exitCode;
  }
  if (cli.command === 'render') {
    const ids = rerenderReports();
    process.stdout.write(`chaos: rewrote ${ids.length} reports in ${reportDir()}\n`);
    return 0;
  }
  buildApps(['defender', 'assignment-controller', 'election-agent']);
  const outcomes: ScenarioOutcome[] = [];
  if (cli.command === 'soak') {
    const { seconds, seed } = cli;
    process.stderr.write(`chaos: soak for ${seconds} s (seed ${seed})\n`);
    outcomes.push(await runSoak({ seconds, seed, progress: new ProgressLine(process.stderr, 'auto', 15_000) }));
  } else {
    const defs = SUITES.filter((d) => cli.suites.includes(d.name)).map((d) => ({
      ...d,
      ...(cli.chambers !== undefined ? { chambers: cli.chambers } : {}),
      scenarios: d.scenarios.filter((x) => !cli.scenarios || cli.scenarios.includes(x.id)),
      // Another fab size keeps the suite's run rate (runs/s), not its speed: at the default 600x,
      // 20,000 chambers would publish about 10,000 runs/s.
      ...(cli.chambers !== undefined ? { speed: Math.min(600, (600 * d.chambers) / cli.chambers) } : {}),
    }));
    const total = defs.reduce((a, d) => a + d.scenarios.length, 0);
    const suffix = `${cli.defaults ? '-defaults' : ''}${cli.chambers !== undefined ? `-${cli.chambers}` : ''}`;
    const started = Date.now();
    let done = 0;
    let held = 0;
    for (const def of defs) {
      if (def.scenarios.length === 0) continue;
      const suite = await startSuite(def, {
        ...(cli.defaults ? { settings: DEFAULT_SETTINGS } : {}),
        ...(suffix ? { reportSuffix: suffix } : {}),
        ...(def.speed !== undefined ? { speed: def.speed } : {}),
      });
      try {
        for (const sc of def.scenarios) {
          const left = remainingMs(done, total, Date.now() - started);
          process.stderr.write(
            `chaos: [${done + 1}/${total}] ${def.name}: ${sc.id} · ${shortDuration(Date.now() - started)} elapsed` +
              `${left === undefined ? '' : `, about ${shortDuration(left)} left`} · invariants held in ${held} of ${done} so far\n`,
          );
          let o: ScenarioOutcome;
          try {
            o = await sc.run(suite);
          } catch (err) {
            // A scenario that could not finish leaves no report: keep every process's log instead.
            process.stderr.write(`chaos: ${sc.id} failed; the processes' logs are in ${saveLogs(suite, sc.id)}\n`);
            throw err;
          }
          done++;
          if (o.report.ok) held++;
          process.stderr.write(`chaos: ${summary(o)}\n`);
          // A violated invariant keeps the logs for its investigation; CHAOS_LOG_DIR keeps every scenario's.
          if (!o.report.ok || process.env['CHAOS_LOG_DIR']) process.stderr.write(`chaos: ${sc.id}: the processes' logs are in ${saveLogs(suite, sc.id)}\n`);
          outcomes.push(o);
        }
      } finally {
        await suite.stop();
      }
    }
  }
  for (const o of outcomes) process.stdout.write(`${summary(o)}\n`);
  return outcomes.every((o) => o.report.ok) ? 0 : 1;
}

if (require.main === module) main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) process.stderr.write(`chaos: ${err.message}\n\n${USAGE}`);
    else process.stderr.write(`chaos: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
