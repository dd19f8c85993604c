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
// Usage: node -r ./tools/scripts/register.js tools/arl/arl.ts [--reps 4000] [--ref-reps 20000] [--seed 20240611]
//          [--strategy my-strategy.json ...] [--no-write]
// `--strategy` adds a row per indicator of an operator's strategy document (its chart and rules, with
// known in-control parameters); the docs/benchmarks.md section is written only for the presets (no
// --strategy, no --no-write), so `npm run arl` reproduces it.
import { readFileSync } from 'node:fs';
import {
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
const MAX_RUN = 1_000_000;
const TOLERANCE = 0.03;

/** Textbook values for the Shewhart individuals chart with known parameters (Montgomery): 1 / P(signal). */
const REFERENCE = [
  { shift: 0, textbook: 370.4 },
  { shift: 1, textbook: 43.9 },
];

function args(): { reps: number; refReps: number; seed: number; write: boolean; strategies: string[] } {
  const a = process.argv.slice(2);
  const num = (flag: string, dflt: number) => {
    const i = a.indexOf(flag);
    if (i < 0) return dflt;
    const v = Number(a[i + 1]);
    if (!Number.isInteger(v) || v <= 0) throw new Error(`${flag} needs a positive integer, got ${a[i + 1]}`);
    return v;
  };
  const strategies = a.flatMap((v, i) => (v === '--strategy' && a[i + 1] ? [a[i + 1]] : []));
  return {
    reps: num('--reps', 4000),
    refReps: num('--ref-reps', 20000),
    seed: num('--seed', 20240611),
    write: !a.includes('--no-write') && strategies.length === 0,
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

/** Simulates `reps` run lengths of `strategy` under a mean shift of `shift` sigma. */
function simulate(strategy: DefenseStrategy, shift: number, reps: number, seed: number): ArlEstimate {
  const cfg = strategy.indicators[0];
  const key = cfg.id;
  const limits = { [key]: knownLimits(cfg.chart, 0, 1, { frozenAt: '1970-01-01T00:00:00.000Z' }) };
  const keep = Math.max(requiredHistoryRuns(strategy), 2);
  const normal = new NormalSampler(new Xoshiro128(seed));
  let sum = 0;
  let sumSq = 0;
  let censored = 0;
  for (let r = 0; r < reps; r++) {
    const runs: RunRecord[] = [];
    let t = 0;
    for (;;) {
      t++;
      const history: ChamberHistory = { runs, limits };
      const run: NewRun = {
        runId: String(t),
        readings: [{ key, indicatorId: key, svid: cfg.svid, value: shift + normal.next() }],
      };
      const e = evaluate(history, run, strategy);
      if (e.violations.length > 0) break;
      if (t >= MAX_RUN) {
        censored++;
        break;
      }
      runs.push(e.record);
      if (runs.length > keep) runs.shift();
    }
    sum += t;
    sumSq += t * t;
  }
  const arl = sum / reps;
  const variance = (sumSq - reps * arl * arl) / (reps - 1);
  return { arl, se: Math.sqrt(variance / reps), censored };
}

const fmt = (e: ArlEstimate) =>
  `${e.arl < 10 ? e.arl.toFixed(2) : e.arl.toFixed(1)} ± ${e.se.toFixed(e.se < 1 ? 2 : 1)}${e.censored ? ` (${e.censored} censored)` : ''}`;

function main(): void {
  const { reps, refReps, seed, write, strategies } = args();
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
    rows.push([name, ...SHIFTS.map((shift) => fmt(simulate(strategy, shift, reps, cellSeed())))]);
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
    table(['strategy', ...SHIFTS.map((s) => (s === 0 ? 'ARL0 (in control)' : `shift ${s} sigma`))], rows),
  ].join('\n');
  if (write)
    writeBenchmarkSection('arl', 'Average run length of defense strategies (tools/arl)', 'npm run arl', body);
  process.stdout.write(`${body}\n`);
  if (failed) {
    process.stderr.write(
      'ARL reference check FAILED: the Shewhart chart does not reproduce the textbook ARL within 3 %\n',
    );
    process.exitCode = 1;
  }
}

main();
