/**
 * Chaos runs outside Jest (needs the built apps: `npx nx run-many -t build -p defender assignment-controller election-agent`).
 *
 *   npm run chaos -- soak [--seconds 600] [--seed 1]
 *   npm run chaos -- suite lifecycle|membership|control-plane|all [--defaults]
 *
 * Reports go to docs/chaos/ (CHAOS_REPORT_DIR to change); the exit code is 1 when an invariant is violated.
 */
import { parseArgs } from 'node:util';
import { ScenarioOutcome } from './lib/runner';
import { DEFAULT_SETTINGS } from './lib/settings';
import { DEFAULT_SOAK } from './lib/soak';
import { runSoak, startSuite, SUITES } from './lib/suites';

/** A wrong command line: reported without a stack trace, exit code 2. */
class UsageError extends Error {}

const USAGE =
  'usage: npm run chaos -- soak [--seconds N] [--seed N]\n' +
  '       npm run chaos -- suite <lifecycle|membership|control-plane|all> [--defaults]\n' +
  '  --defaults  the production intervals (heartbeat 2 s, windows 30/10 s, election TTL 10 s); reports get the suffix -defaults\n';

function summary(o: ScenarioOutcome): string {
  const bad = o.report.invariants.filter((i) => !i.ok);
  return `${o.report.id}: ${bad.length ? `VIOLATED ${bad.map((i) => i.id).join(', ')}` : 'invariants held'} (${o.report.durationSeconds.toFixed(0)} s)`;
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { seconds: { type: 'string' }, seed: { type: 'string' }, defaults: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  const [command, arg] = positionals;
  if (values.help || !command) {
    (values.help ? process.stdout : process.stderr).write(USAGE);
    return values.help ? 0 : 2;
  }
  const outcomes: ScenarioOutcome[] = [];
  if (command === 'soak') {
    const seconds = Number(values.seconds ?? process.env['CHAOS_SOAK_SECONDS'] ?? DEFAULT_SOAK.seconds);
    const seed = Number(values.seed ?? DEFAULT_SOAK.seed);
    if (!(seconds > 0) || !Number.isInteger(seed)) throw new UsageError('--seconds must be > 0 and --seed an integer');
    process.stderr.write(`chaos: soak for ${seconds} s (seed ${seed})\n`);
    outcomes.push(await runSoak({ seconds, seed }));
  } else if (command === 'suite') {
    const defs = arg === 'all' || arg === undefined ? SUITES : SUITES.filter((d) => d.name === arg);
    if (defs.length === 0) throw new UsageError(`unknown suite ${arg}; one of ${SUITES.map((d) => d.name).join(', ')}, all`);
    for (const def of defs) {
      const suite = await startSuite(def, values.defaults ? { settings: DEFAULT_SETTINGS, reportSuffix: '-defaults' } : {});
      try {
        for (const sc of def.scenarios) {
          const o = await sc.run(suite);
          process.stderr.write(`chaos: ${summary(o)}\n`);
          outcomes.push(o);
        }
      } finally {
        await suite.stop();
      }
    }
  } else {
    throw new UsageError(`unknown command ${command}\n${USAGE}`);
  }
  for (const o of outcomes) process.stdout.write(`${summary(o)}\n`);
  return outcomes.every((o) => o.report.ok) ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) process.stderr.write(`chaos: ${err.message}\n`);
    else process.stderr.write(`chaos: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
