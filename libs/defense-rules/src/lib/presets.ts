import { DEFAULT_STRATEGY_DOCUMENT, WESTERN_ELECTRIC_STRATEGY_DOCUMENT } from './default-strategy';
import { parseStrategy, type DefenseStrategy } from './strategy';

/** A named strategy the product ships: its document (what an operator stores) and the parsed strategy. */
export interface StrategyPreset {
  readonly name: string;
  readonly summary: string;
  /** The strategy document (JSON), as an operator would store it for a chamber. */
  readonly document: Readonly<Record<string, unknown>>;
  readonly strategy: DefenseStrategy;
}

function preset(summary: string, document: Readonly<Record<string, unknown>>): StrategyPreset {
  const strategy = parseStrategy(document);
  return { name: strategy.name, summary, document, strategy };
}

/**
 * Every preset, the one a new chamber gets (`default`) first. The figures each summary quotes are
 * measured by `npm run bench:detection` (docs/benchmarks.md).
 */
export const STRATEGY_PRESETS: readonly StrategyPreset[] = [
  preset(
    'what a chamber without a strategy gets: the chamber monitor (every SVID x step x the monitor statistics; T², SPE, raw and residual limits) at an in-control ARL of 370 runs per chamber, Phase I of 30 runs, 3 alarmed runs in 5 -> hold',
    DEFAULT_STRATEGY_DOCUMENT,
  ),
  preset('the chamber monitor at an in-control ARL of 100 runs: earlier detection, more alarms on good runs', {
    ...DEFAULT_STRATEGY_DOCUMENT,
    name: 'sensitive',
    budget: { alarmArl: 100 },
  }),
  preset('the chamber monitor at an in-control ARL of 2,000 runs, Phase I of 40 runs: few alarms, only clear faults', {
    ...DEFAULT_STRATEGY_DOCUMENT,
    name: 'quiet',
    monitor: { baseline: { minRuns: 40 } },
    budget: { alarmArl: 2000 },
  }),
  preset(
    'the classic per-chart strategy: mean and std of every SVID over the context, Western Electric rules, limits from 20 runs, 2 alarmed runs in 5 -> hold (every chart spends its own false-alarm rate: many alarms on good runs)',
    WESTERN_ELECTRIC_STRATEGY_DOCUMENT,
  ),
];

/** The preset of that name, or undefined. */
export function strategyPreset(name: string): StrategyPreset | undefined {
  return STRATEGY_PRESETS.find((p) => p.name === name);
}
