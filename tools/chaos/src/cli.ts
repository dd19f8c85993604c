/**
 * Chaos runs outside Jest (needs the built apps: `npx nx run-many -t build -p defender assignment-controller election-agent`).
 *
 *   npm run chaos -- soak [--seconds 600] [--seed 1]
 *   npm run chaos -- suite lifecycle|membership|control-plane|all [--defaults]
 *   npm run chaos -- render
 *   npm run chaos -- --help
 *
 * Reports go to docs/chaos/ (CHAOS_REPORT_DIR to change); the exit code is 1 when an invariant is violated.
 */
import { parseArgs } from 'node:util';
import { ProgressLine, remainingMs, shortDuration } from '@defender/infra-harness';
import { rerenderReports, reportDir } from './lib/report';
import { ScenarioOutcome } from './lib/runner';
import { DEFAULT_SETTINGS } from './lib/settings';
import { DEFAULT_SOAK } from './lib/soak';
import { runSoak, startSuite, SUITES } from './lib/suites';

/** A wrong command line: reported without a stack trace, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const USAGE =
  'Usage: npm run chaos -- soak [--seconds N] [--seed N]\n' +
  '       npm run chaos -- suite <lifecycle|membership|control-plane|all> [--defaults]\n' +
  '       npm run chaos -- render\n' +
  '\n' +
  '  soak        random faults against one cluster for --seconds (default CHAOS_SOAK_SECONDS, else ' + `${DEFAULT_SOAK.seconds}), seeded by --seed (default ${DEFAULT_SOAK.seed})\n` +
  '  suite       the scenarios of one suite (default all), each against a fresh cluster\n' +
  '  render      rewrite every report\'s Markdown (tables, timeline picture) and the index from its JSON; runs nothing\n' +
  '  --defaults  the production intervals (heartbeat 2 s, windows 30/10 s, election TTL 10 s); reports get the suffix -defaults\n' +
  '  -h, --help  this text\n' +
  '\n' +
  'Needs the built apps (npx nx run-many -t build -p defender assignment-controller election-agent). Reports go to\n' +
  'docs/chaos/ (CHAOS_REPORT_DIR to change); exit code 1 when an invariant is violated, 2 for a wrong command line.\n';

export type Invocation =
  | { readonly command: 'help'; readonly exitCode: 0 | 2 }
  | { readonly command: 'soak'; readonly seconds: number; readonly seed: number }
  | { readonly command: 'suite'; readonly suites: readonly string[]; readonly defaults: boolean }
  | { readonly command: 'render' };

/** Parses the command line (without node and the script); `env` gives CHAOS_SOAK_SECONDS. @throws UsageError */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv): Invocation {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: { seconds: { type: 'string' }, seed: { type: 'string' }, defaults: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
  const { values, positionals } = parsed;
  const [command, arg, ...extra] = positionals;
  if (values.help || !command) return { command: 'help', exitCode: values.help ? 0 : 2 };
  if (command === 'soak') {
    if (arg !== undefined) throw new UsageError(`soak takes no arguments, got "${arg}"`);
    if (values.defaults) throw new UsageError('--defaults applies to suite only');
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
    return { command, suites: arg === undefined || arg === 'all' ? names : [arg], defaults: values.defaults ?? false };
  }
  if (command === 'render') {
    if (arg !== undefined) throw new UsageError(`render takes no arguments, got "${arg}"`);
    if (values.seconds !== undefined || values.seed !== undefined || values.defaults) throw new UsageError('render takes no options');
    return { command };
  }
  throw new UsageError(`unknown command ${command} (soak, suite or render)`);
}

function summary(o: ScenarioOutcome): string {
  const bad = o.report.invariants.filter((i) => !i.ok);
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
  const outcomes: ScenarioOutcome[] = [];
  if (cli.command === 'soak') {
    const { seconds, seed } = cli;
    process.stderr.write(`chaos: soak for ${seconds} s (seed ${seed})\n`);
    outcomes.push(await runSoak({ seconds, seed, progress: new ProgressLine(process.stderr, 'auto', 15_000) }));
  } else {
    const defs = SUITES.filter((d) => cli.suites.includes(d.name));
    const total = defs.reduce((a, d) => a + d.scenarios.length, 0);
    const started = Date.now();
    let done = 0;
    let held = 0;
    for (const def of defs) {
      const suite = await startSuite(def, cli.defaults ? { settings: DEFAULT_SETTINGS, reportSuffix: '-defaults' } : {});
      try {
        for (const sc of def.scenarios) {
          const left = remainingMs(done, total, Date.now() - started);
          process.stderr.write(
            `chaos: [${done + 1}/${total}] ${def.name}: ${sc.id} · ${shortDuration(Date.now() - started)} elapsed` +
              `${left === undefined ? '' : `, about ${shortDuration(left)} left`} · invariants held in ${held} of ${done} so far\n`,
          );
          const o = await sc.run(suite);
          done++;
          if (o.report.ok) held++;
          process.stderr.write(`chaos: ${summary(o)}\n`);
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
