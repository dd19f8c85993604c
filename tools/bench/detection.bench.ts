// Detection benchmark: how well each shipped strategy preset tells bad runs from good ones on a
// realistic simulated fab (tools/fab-sim), run through the product's own evaluation path
// (RunEvaluator: trace -> indicators -> strategy -> alarms -> escalation), library level, seeded.
//
// npm run bench:detection                      # full: every preset, writes the `detection` section of docs/benchmarks.md
// npm run bench:detection -- --quick --no-write
// npm run bench:detection -- --help
// npm run bench:detection -- --profile real-equipment   # the default preset on the real-equipment profile (issue 49),
//                                                       # writes the `detection-real-equipment` section
//
// The last stdout line is the default preset's figures:
// detection: preset <name> false-alarms <x.x>% worst-chamber <x.x>% holds-per-1k <x.x> detected <x.x>% delay-p90 <n> runs
// With --profile real-equipment one more line follows it:
// detection: profile real-equipment preset default false-alarms <x.x>% worst-chamber <x.x>% holds-per-1k <x.x> sustained-2sigma <x.x>% oracle-efficiency <x.x>% closed-loop <x.x>% regime-alarms <n> delay-p90 <n> runs
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { parseStrategy, STRATEGY_PRESETS } from '@defender/defense-rules';
import { writeBenchmarkSection } from './report';
import { consistencyProblems, lastLine, profileLastLine, renderProfileSection, renderSection, targetChecks } from './detection/render';
import {
  BENCH_PROFILES,
  buildScenario,
  FULL_OPTIONS,
  QUICK_OPTIONS,
  REAL_EQUIPMENT_OPTIONS,
  REAL_EQUIPMENT_QUICK_OPTIONS,
  type BenchProfile,
  type DetectionBenchOptions,
  type PresetResult,
} from './detection/simulate';

const USAGE = `Usage: npm run bench:detection -- [options]

Runs every strategy preset the product ships over a simulated fab and reports false alarms,
holds, detection per excursion kind and size, and detection delay.

Options:
  --quick             fewer chambers and runs (CI), same code path; implies --no-write
  --profile <name>    the simulated fab: detection (default) or real-equipment (lattice sensors, equipment
                      events, production periods, closed-loop faults; sizes 1-4 sigma over 1-10 runs;
                      default preset only unless --preset; writes its own section)
  --preset <name>     only this preset (repeatable); default: all (${STRATEGY_PRESETS.map((p) => p.name).join(', ')})
  --strategy <file>   also this strategy document (repeatable; its name is its label); implies --no-write
  --seed <n>          simulation seed (default ${FULL_OPTIONS.seed})
  --tools <n>         tools in the simulated fab (default ${FULL_OPTIONS.tools}; ~2.5 chambers each)
  --runs <n>          runs per chamber, Phase I included (default ${FULL_OPTIONS.runsPerChamber})
  --excursions <n>    excursions in total (default ${FULL_OPTIONS.excursions})
  --excursion-after <n>  first run an excursion may start at (default ${FULL_OPTIONS.excursionAfter})
  --parallel <n>      presets run at once, one worker thread each (default: the cores, ${availableParallelism()})
  --no-write          do not write docs/benchmarks.md
  --withhold-events   the real-equipment profile's events happen to the chambers but never reach the engine
                      (a fab whose host reports none: what REGIME is for); implies --no-write
  --json              print the results as JSON before the last line
  -h, --help          this text
`;

function intArg(v: string | undefined, name: string, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1) {
    process.stderr.write(`--${name} must be an integer >= 1, got ${v}\n`);
    process.exit(2);
  }
  return n;
}

/** Whether the options are the profile's own (a section in docs/benchmarks.md is written only for those). */
function isDefaultRun(options: DetectionBenchOptions, defaults: DetectionBenchOptions): boolean {
  return (
    options.seed === defaults.seed &&
    options.tools === defaults.tools &&
    options.runsPerChamber === defaults.runsPerChamber &&
    options.excursions === defaults.excursions &&
    options.excursionAfter === defaults.excursionAfter &&
    !options.withholdEvents
  );
}

/** Runs one preset in a worker thread (the same code path; presets share nothing). */
function inWorker(options: DetectionBenchOptions, preset: { name: string; document: unknown }): Promise<{ result: PresetResult; seconds: number }> {
  return new Promise((resolve, reject) => {
    const w = new Worker(join(__dirname, 'detection', 'worker.ts'), { workerData: { options, preset } });
    w.once('message', resolve);
    w.once('error', reject);
    w.once('exit', (code) => {
      if (code !== 0) reject(new Error(`preset ${preset.name}: worker exited with code ${code}`));
    });
  });
}

/** Runs the presets `parallel` at a time, results in the presets' order. */
async function runAll(options: DetectionBenchOptions, presets: readonly { name: string; document: unknown }[], parallel: number): Promise<PresetResult[]> {
  const results: PresetResult[] = new Array(presets.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < presets.length; i = next++) {
      const p = presets[i] as { name: string; document: unknown };
      const { result, seconds } = await inWorker(options, p);
      process.stderr.write(`  ${p.name}: ${seconds.toFixed(1)} s\n`);
      results[i] = result;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(parallel, presets.length)) }, lane));
  return results;
}

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: {
        quick: { type: 'boolean', default: false },
        profile: { type: 'string' },
        preset: { type: 'string', multiple: true },
        strategy: { type: 'string', multiple: true },
        seed: { type: 'string' },
        tools: { type: 'string' },
        runs: { type: 'string' },
        excursions: { type: 'string' },
        'excursion-after': { type: 'string' },
        'no-write': { type: 'boolean', default: false },
        'withhold-events': { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        parallel: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    }).values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const profile = (args.profile ?? 'detection') as BenchProfile;
  if (!BENCH_PROFILES.includes(profile)) {
    process.stderr.write(`unknown profile ${args.profile} (${BENCH_PROFILES.join(', ')})\n`);
    return 2;
  }
  const real = profile === 'real-equipment';
  const base = real ? (args.quick ? REAL_EQUIPMENT_QUICK_OPTIONS : REAL_EQUIPMENT_OPTIONS) : args.quick ? QUICK_OPTIONS : FULL_OPTIONS;
  const options = {
    ...base,
    seed: intArg(args.seed, 'seed', base.seed),
    tools: intArg(args.tools, 'tools', base.tools),
    runsPerChamber: intArg(args.runs, 'runs', base.runsPerChamber),
    excursions: intArg(args.excursions, 'excursions', base.excursions),
    excursionAfter: intArg(args['excursion-after'], 'excursion-after', base.excursionAfter),
    ...(args['withhold-events'] ? { withholdEvents: true } : {}),
  };
  // The real-equipment profile runs the default preset unless presets are named.
  const wanted = args.preset ?? (real && (args.strategy ?? []).length === 0 ? ['default'] : []);
  const unknown = wanted.filter((n) => !STRATEGY_PRESETS.some((p) => p.name === n));
  if (unknown.length > 0) {
    process.stderr.write(`unknown preset ${unknown.join(', ')} (${STRATEGY_PRESETS.map((p) => p.name).join(', ')})\n`);
    return 2;
  }
  const files = args.strategy ?? [];
  const custom: { name: string; document: unknown }[] = [];
  for (const f of files) {
    try {
      const document = JSON.parse(readFileSync(f, 'utf8')) as unknown;
      custom.push({ name: parseStrategy(document).name, document });
    } catch (err) {
      process.stderr.write(`${f}: ${(err as Error).message}\n`);
      return 2;
    }
  }
  const presets = [
    // Presets asked for by name; all of them unless only strategy files were given.
    ...(wanted.length > 0 ? STRATEGY_PRESETS.filter((p) => wanted.includes(p.name)) : files.length > 0 ? [] : STRATEGY_PRESETS),
    ...custom,
  ];
  const started = performance.now();
  const scenario = buildScenario(options);
  process.stderr.write(
    `bench:detection: ${scenario.fab.chambers.length} chambers x ${options.runsPerChamber} runs, ` +
      `${scenario.excursions.length} excursions, presets ${presets.map((p) => p.name).join(', ')}\n`,
  );
  const parallel = intArg(args.parallel, 'parallel', availableParallelism());
  const results = await runAll(options, presets.map((p) => ({ name: p.name, document: p.document })), parallel);
  const seconds = (performance.now() - started) / 1000;
  let problems = 0;
  for (const r of results) {
    for (const p of consistencyProblems(scenario, r)) {
      process.stderr.write(`inconsistent figures for ${r.preset}: ${p}\n`);
      problems++;
    }
  }
  const body = real ? `${renderProfileSection(scenario, results)}\n\n${renderSection(scenario, results, seconds)}` : renderSection(scenario, results, seconds);
  process.stdout.write(`${body}\n\n`);
  if (args.json) {
    const plain = results.map((r) => ({ ...r, metrics: { ...r.metrics, excursions: r.metrics.excursions.map((o) => ({ id: o.excursion.id, kind: o.excursion.kind, size: o.excursion.size, detected: o.detected, delayRuns: o.delayRuns })) } }));
    process.stdout.write(`${JSON.stringify(plain)}\n`);
  }
  if (!args.quick && !args['no-write'] && wanted.length === 0 && files.length === 0 && problems === 0) {
    writeBenchmarkSection('detection', 'Detection: false alarms and faults caught, per strategy preset', 'npm run bench:detection', body);
  }
  const defaultOnly = args.preset === undefined || (args.preset.length === 1 && args.preset[0] === 'default');
  if (real && !args.quick && !args['no-write'] && defaultOnly && files.length === 0 && problems === 0 && isDefaultRun(options, REAL_EQUIPMENT_OPTIONS)) {
    writeBenchmarkSection(
      'detection-real-equipment',
      'Detection on the real-equipment profile: events, lattice sensors, closed loops (default preset)',
      'npm run bench:detection -- --profile real-equipment',
      body,
    );
  }
  const def = results.find((r) => r.preset === 'default') ?? results[0];
  for (const r of results) {
    const missed = targetChecks(r.metrics).filter((c) => !c.met);
    if (missed.length > 0) process.stderr.write(`${r.preset}: targets missed: ${missed.map((c) => `${c.what} ${c.value} (${c.target})`).join('; ')}\n`);
  }
  if (def) process.stdout.write(`${lastLine(def)}\n`);
  const extra = def ? profileLastLine(scenario, def) : undefined;
  if (extra) process.stdout.write(`${extra}\n`);
  return problems === 0 ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`bench:detection failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
