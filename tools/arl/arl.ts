// Monte-Carlo average run length (ARL) of defense strategies, so an operator can trade false alarms
// (in-control ARL0, larger is better) against detection delay (ARL after a mean shift, smaller is better).
//
// Each strategy is a defense-strategy document validated by parseStrategy and run through the same
// evaluate() a defender uses, one simulated run at a time, with known in-control parameters (mean 0,
// sigma 1): a run length is the number of runs up to and including the first alarm. The shift (in
// sigma) applies from the first run (zero-state ARL). Seeded, so the table is reproducible.
//
// Check: Shewhart 3-sigma individuals with known parameters must reproduce the textbook
// ARL0 = 1 / 0.0027 = 370.4 and ARL(1 sigma) = 43.9 within 3 % (exit code 1 otherwise).
//
// A second table is per chamber: a strategy watches many indicators at once, so what an engineer sees
// is the chamber's in-control ARL (runs until any chart alarms), not one chart's. For k = 2, 6, 20, 100
// independent in-control indicators it gives the chamber ARL0 of the chart presets (k charts each) and of
// the shipped strategy presets with a chamber monitor (Phase I estimated from in-control runs, as in
// production), which must meet their budget (`budget.alarmArl`).
//
// Usage: npm run arl -- --help
// `--strategy` adds a row per indicator of an operator's strategy document (its chart and rules, with
// known in-control parameters); the docs/benchmarks.md section is written only for the presets (no
// --strategy, no --no-write), so `npm run arl` reproduces it.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  fitMonitorModel,
  MonitorBaselineError,
  residualSds,
  scoreMonitorRun,
  STRATEGY_PRESETS,
  evaluate,
  parseStrategy,
  requiredHistoryRuns,
  type ChamberHistory,
  type DefenseStrategy,
  type IndicatorConfig,
  type NewRun,
  type RunRecord,
} from '@defender/defense-rules';
import { knownLimits } from '@defender/uchart';
import { table, writeBenchmarkSection } from '@defender/benchmarks';
import { NormalSampler, splitmix32, Xoshiro128 } from './rng';

interface Preset {
  readonly name: string;
  /** The indicator part of the strategy document (chart + rules). */
  readonly indicator: Record<string, unknown>;
}

const PRESETS: readonly Preset[] = [
  { name: 'Shewhart 3-sigma (N1 / WE1 only)', indicator: { rules: ['N1'] } },
  { name: 'Western Electric rules 1-4', indicator: { rules: ['western-electric'] } },
  { name: 'Nelson rules 1-8', indicator: { rules: ['nelson'] } },
  { name: 'Shewhart + WE2 + WE3 (no run of 8)', indicator: { rules: ['WE1', 'WE2', 'WE3'] } },
  { name: 'EWMA lambda 0.2, L 3 (exact limits)', indicator: { chart: { type: 'ewma', lambda: 0.2, L: 3 } } },
  {
    name: 'EWMA lambda 0.1, L 2.7 (exact limits)',
    indicator: { chart: { type: 'ewma', lambda: 0.1, L: 2.7 } },
  },
  { name: 'CUSUM k 0.5, h 4', indicator: { chart: { type: 'cusum', k: 0.5, h: 4 } } },
  { name: 'CUSUM k 0.5, h 5', indicator: { chart: { type: 'cusum', k: 0.5, h: 5 } } },
  {
    name: 'CUSUM k 0.5, h 5, FIR head start 2.5',
    indicator: { chart: { type: 'cusum', k: 0.5, h: 5, headStart: 2.5 } },
  },
];

const SHIFTS = [0, 0.5, 1, 1.5, 2, 3];
/** Indicators per chamber in the per-chamber table. */
const CHAMBER_SIZES = [2, 6, 20, 100];
/** Longest simulated chamber run length (runs) before a replication is censored. */
const MAX_CHAMBER_RUN = 100_000;
const MAX_RUN = 1_000_000;
const TOLERANCE = 0.03;

/** Textbook values for the Shewhart individuals chart with known parameters (Montgomery): 1 / P(signal). */
const REFERENCE = [
  { shift: 0, textbook: 370.4 },
  { shift: 1, textbook: 43.9 },
];

const USAGE = `Usage: npm run arl -- [options]

Monte-Carlo average run length (ARL) of defense strategies: per chart (presets of one indicator, known
parameters, a mean shift in sigma) and per chamber (k in-control indicators at once).

Options:
  --reps <n>          replications per cell (default 4000)
  --ref-reps <n>      replications of the textbook reference check (default 20000)
  --chamber-reps <n>  replications per chamber-ARL cell (default 200)
  --seed <n>          seed (default 20240611)
  --shifts <list>     mean shifts in sigma for the chart table (default ${SHIFTS.join(',')})
  --charts <list>     indicators per chamber for the chamber table (default ${CHAMBER_SIZES.join(',')})
  --preset <name>     only this chart or strategy preset (repeatable; matches by name)
  --strategy <file>   also one row per indicator of a strategy document (not written to docs)
  --no-write          print only; do not write docs/benchmarks.md
  -h, --help          this text

The docs/benchmarks.md section is written only with the defaults (no --strategy, --preset, --shifts,
--charts, --no-write), so \`npm run arl\` reproduces it.
`;

export interface Args {
  readonly reps: number;
  readonly refReps: number;
  readonly chamberReps: number;
  readonly seed: number;
  readonly shifts: readonly number[];
  readonly charts: readonly number[];
  readonly presets: readonly string[];
  readonly write: boolean;
  readonly strategies: readonly string[];
}

/** A wrong command line: exit code 2 with the usage. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Parses the command line (without node and the script); 'help' for -h/--help.
 * @throws UsageError or parseArgs' error (unknown option, missing value, a positional argument).
 */
export function parseCommandLine(argv: readonly string[]): Args | 'help' {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      reps: { type: 'string' },
      'ref-reps': { type: 'string' },
      'chamber-reps': { type: 'string' },
      seed: { type: 'string' },
      shifts: { type: 'string' },
      charts: { type: 'string' },
      preset: { type: 'string', multiple: true },
      strategy: { type: 'string', multiple: true },
      'no-write': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const int = (flag: string, v: string | undefined, dflt: number) => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${flag} needs a positive integer, got ${v}`);
    return n;
  };
  const list = (flag: string, v: string | undefined, dflt: readonly number[], integer: boolean) => {
    if (v === undefined) return dflt;
    const xs = v.split(',').map((x) => Number(x.trim()));
    if (xs.length === 0 || xs.some((x) => !Number.isFinite(x) || x < 0 || (integer && (!Number.isInteger(x) || x < 1))))
      throw new UsageError(`--${flag} needs a comma-separated list of ${integer ? 'integers >= 1' : 'numbers >= 0'}, got ${v}`);
    return xs;
  };
  const presets = values.preset ?? [];
  const known = [...PRESETS.map((p) => p.name), ...STRATEGY_PRESETS.map((p) => p.name)];
  const unknown = presets.filter((n) => !known.includes(n));
  if (unknown.length > 0) throw new UsageError(`unknown preset ${unknown.join(', ')}; presets: ${known.join('; ')}`);
  const strategies = values.strategy ?? [];
  const custom = presets.length > 0 || values.shifts !== undefined || values.charts !== undefined || strategies.length > 0;
  return {
    reps: int('reps', values.reps, 4000),
    refReps: int('ref-reps', values['ref-reps'], 20000),
    chamberReps: int('chamber-reps', values['chamber-reps'], 200),
    seed: int('seed', values.seed, 20240611),
    shifts: list('shifts', values.shifts, SHIFTS, false),
    charts: list('charts', values.charts, CHAMBER_SIZES, true),
    presets,
    write: !values['no-write'] && !custom,
    strategies,
  };
}

/** A preset as a one-indicator strategy document, validated like an operator's. */
function strategyOf(preset: Preset): DefenseStrategy {
  return parseStrategy({
    schemaVersion: 1,
    name: preset.name,
    indicators: [{ id: 'x', svid: 'x', statistic: 'mean', ...preset.indicator }],
    escalation: [],
  });
}

/** One row per indicator of a strategy document: that indicator alone, escalation off. */
function strategiesFromFile(path: string): { name: string; strategy: DefenseStrategy }[] {
  const doc = parseStrategy(readFileSync(path, 'utf8'));
  return doc.indicators.map((ind: IndicatorConfig) => ({
    name: `${doc.name} / ${ind.id} (${ind.chart.type}${ind.rules.length ? `, ${ind.rules.map((r) => r.id).join(' ')}` : ''})`,
    strategy: { ...doc, indicators: [ind], escalation: [] },
  }));
}

interface ArlEstimate {
  readonly arl: number;
  /** Standard error of the mean run length. */
  readonly se: number;
  readonly censored: number;
}

/**
 * Simulates `reps` run lengths of `strategy` (every indicator with known mean 0 and sigma 1, each fed its
 * own normal value per run) under a mean shift of `shift` sigma; a run length is censored at `maxRun`.
 */
function simulate(strategy: DefenseStrategy, shift: number, reps: number, seed: number, maxRun = MAX_RUN): ArlEstimate {
  const limits = Object.fromEntries(
    strategy.indicators.map((c) => [c.id, knownLimits(c.chart, 0, 1, { frozenAt: '1970-01-01T00:00:00.000Z' })]),
  );
  const keep = Math.max(requiredHistoryRuns(strategy), 2);
  const normal = new NormalSampler(new Xoshiro128(seed));
  const lengths: number[] = [];
  let censored = 0;
  for (let r = 0; r < reps; r++) {
    const runs: RunRecord[] = [];
    let t = 0;
    for (;;) {
      t++;
      const history: ChamberHistory = { runs, limits };
      const run: NewRun = {
        runId: String(t),
        readings: strategy.indicators.map((c) => ({ key: c.id, indicatorId: c.id, svid: c.svid, value: shift + normal.next() })),
      };
      const e = evaluate(history, run, strategy);
      if (e.violations.length > 0) break;
      if (t >= maxRun) {
        censored++;
        break;
      }
      runs.push(e.record);
      if (runs.length > keep) runs.shift();
    }
    lengths.push(t);
  }
  return estimate(lengths, censored);
}

const fmt = (e: ArlEstimate) =>
  `${e.arl < 10 ? e.arl.toFixed(2) : e.arl.toFixed(1)} ± ${e.se.toFixed(e.se < 1 ? 2 : 1)}${e.censored ? ` (${e.censored} censored)` : ''}`;

/** Chamber ARL0 of a chart preset on `k` independent in-control indicators (known parameters, k charts). */
function simulateChamberCharts(preset: Preset, k: number, reps: number, seed: number): ArlEstimate {
  const strategy = parseStrategy({
    schemaVersion: 1,
    name: `${preset.name} x${k}`,
    indicators: Array.from({ length: k }, (_, j) => ({ id: `x${j}`, svid: `x${j}`, statistic: 'mean', ...preset.indicator })),
    escalation: [],
  });
  return simulate(strategy, 0, reps, seed, MAX_CHAMBER_RUN);
}

/**
 * Chamber ARL0 of a shipped strategy preset's monitor on `k` independent in-control indicators: each
 * replication estimates Phase I from `baseline.minRuns` in-control runs (as a chamber does), then
 * counts runs until the first alarm — the unconditional in-control ARL, estimation error included.
 */
function simulateChamberMonitor(strategy: DefenseStrategy, k: number, reps: number, seed: number): ArlEstimate {
  const cfg = strategy.monitor;
  if (!cfg) throw new Error(`${strategy.name} has no monitor`);
  const normal = new NormalSampler(new Xoshiro128(seed));
  const keys = Array.from({ length: k }, (_, j) => `x${j}`);
  const lengths: number[] = [];
  let censored = 0;
  let mewma: readonly number[] | null = null;
  for (let r = 0; r < reps; r++) {
    const rows = Array.from({ length: cfg.baseline.minRuns }, () => keys.map(() => normal.next()));
    let model;
    try {
      model = fitMonitorModel(rows, keys, rows.map((_, i) => `p${i}`), cfg, strategy.budget);
    } catch (err) {
      if (err instanceof MonitorBaselineError) continue;
      throw err;
    }
    mewma = null;
    const sds = residualSds(model);
    let t = 0;
    for (;;) {
      t++;
      const values = new Map(keys.map((key) => [key, normal.next()]));
      const score = scoreMonitorRun(model, values, 'model', mewma, model.center, sds);
      mewma = score.mewmaState;
      if (score.violations.length > 0) break;
      if (t >= MAX_CHAMBER_RUN) {
        censored++;
        break;
      }
    }
    lengths.push(t);
  }
  return estimate(lengths, censored);
}

function estimate(lengths: readonly number[], censored: number): ArlEstimate {
  const n = lengths.length;
  const arl = lengths.reduce((a, b) => a + b, 0) / n;
  const variance = lengths.reduce((a, b) => a + (b - arl) * (b - arl), 0) / Math.max(1, n - 1);
  return { arl, se: Math.sqrt(variance / n), censored };
}

function main(): void {
  let parsed: Args | 'help';
  try {
    parsed = parseCommandLine(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (parsed === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const { reps, refReps, chamberReps, seed, write, strategies, shifts, charts, presets } = parsed;
  const chartPresets = presets.length > 0 ? PRESETS.filter((p) => presets.includes(p.name)) : PRESETS;
  const strategyPresets = (presets.length > 0 ? STRATEGY_PRESETS.filter((p) => presets.includes(p.name)) : STRATEGY_PRESETS).filter(
    (p) => p.strategy.monitor,
  );
  const cellSeed = splitmix32(seed);
  const started = Date.now();
  // 1. Reference check against the textbook values.
  const shewhart = strategyOf(PRESETS[0]);
  const refRows: (string | number)[][] = [];
  let failed = false;
  for (const ref of REFERENCE) {
    const e = simulate(shewhart, ref.shift, refReps, cellSeed());
    const diff = (e.arl - ref.textbook) / ref.textbook;
    const ok = Math.abs(diff) <= TOLERANCE;
    failed ||= !ok;
    refRows.push([
      `${ref.shift} sigma`,
      ref.textbook,
      fmt(e),
      `${(100 * diff).toFixed(2)} %`,
      refReps,
      ok ? 'PASS' : 'FAIL',
    ]);
  }

  // 2. The presets, in-control and shifted.
  const rows: (string | number)[][] = [];
  const configured = [
    ...PRESETS.map((p) => ({ name: p.name, strategy: strategyOf(p) })),
    ...strategies.flatMap(strategiesFromFile),
  ];
  for (const { name, strategy } of configured) {
    rows.push([name, ...shifts.map((shift) => fmt(simulate(strategy, shift, reps, cellSeed())))]);
  }

  // 3. Per chamber: k indicators at once.
  const chamberRows: (string | number)[][] = [];
  for (const p of chartPresets) {
    chamberRows.push([`${p.name}, one chart per indicator`, '–', ...charts.map((k) => fmt(simulateChamberCharts(p, k, chamberReps, cellSeed())))]);
  }
  let budgetMissed = false;
  for (const p of strategyPresets) {
    const cells = charts.map((k) => simulateChamberMonitor(p.strategy, k, chamberReps, cellSeed()));
    // Within 2 standard errors of the budget counts as meeting it (Monte-Carlo noise).
    const missed = cells.some((e) => e.arl + 2 * e.se < p.strategy.budget.alarmArl);
    budgetMissed ||= missed;
    chamberRows.push([`strategy preset \`${p.name}\` (chamber monitor)`, `${p.strategy.budget.alarmArl}${missed ? ' (missed)' : ''}`, ...cells.map(fmt)]);
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(0);

  const body = [
    'Zero-state average run length (runs until the first alarm, the alarming run included) of defense',
    'strategies evaluated by `evaluate()` from `@defender/defense-rules`, with known in-control mean 0 and',
    'sigma 1 and a step shift of the mean (in sigma) from the first run. Mean ± standard error over the',
    `replications; seed ${seed}, ${reps} replications per cell (${refReps} for the reference check), ${seconds} s.`,
    'Larger ARL at shift 0 = fewer false alarms; smaller ARL under a shift = faster detection.',
    '',
    '**Reference check** (Shewhart 3-sigma individuals, known parameters; textbook ARL = 1 / P(point beyond 3 sigma)):',
    '',
    table(
      [
        'mean shift',
        'textbook ARL',
        'simulated',
        'difference',
        'replications',
        `within ${TOLERANCE * 100} %`,
      ],
      refRows,
    ),
    '',
    '**Presets**:',
    '',
    table(['strategy', ...shifts.map((s) => (s === 0 ? 'ARL0 (in control)' : `shift ${s} sigma`))], rows),
    '',
    `**Per chamber**: in-control ARL of a whole chamber watching k independent in-control indicators (runs until any`,
    `chart alarms; ${chamberReps} replications per cell). Chart presets: one chart per indicator, known parameters: the`,
    'family-wise cost of many charts. Strategy presets: the chamber monitor with Phase I estimated from in-control runs',
    'in every replication (estimation error included); its in-control ARL must meet the budget.',
    '',
    table(['strategy', 'budget (ARL0)', ...charts.map((k) => `k = ${k}`)], chamberRows),
  ].join('\n');
  if (write)
    writeBenchmarkSection('arl', 'Average run length of defense strategies (tools/arl)', 'npm run arl', body);
  process.stdout.write(`${body}\n`);
  if (budgetMissed) {
    process.stderr.write('a strategy preset misses its false-alarm budget (see the per-chamber table)\n');
    process.exitCode = 1;
  }
  if (failed) {
    process.stderr.write(
      'ARL reference check FAILED: the Shewhart chart does not reproduce the textbook ARL within 3 %\n',
    );
    process.exitCode = 1;
  }
}

if (require.main === module) main();
