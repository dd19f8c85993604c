import { DEFAULT_STRATEGY_DOCUMENT, MONITOR_STRATEGY_DOCUMENT } from './default-strategy';
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

/** Every preset, the one a new chamber gets (`default`) first. */
export const STRATEGY_PRESETS: readonly StrategyPreset[] = [
  preset(
    'what a chamber without a strategy gets: mean and std of every SVID over the context, Western Electric rules, limits from 20 runs, 2 alarms in 5 runs -> hold',
    DEFAULT_STRATEGY_DOCUMENT,
  ),
  preset(
    'the chamber monitor (every SVID x step x 11 statistics; T², SPE, raw and residual limits) at an in-control ARL of 370 runs per chamber',
    MONITOR_STRATEGY_DOCUMENT,
  ),
  preset('the chamber monitor at an in-control ARL of 100 runs: earlier detection, about 1 % of good runs alarm', {
    ...MONITOR_STRATEGY_DOCUMENT,
    name: 'sensitive',
    budget: { alarmArl: 100 },
  }),
  preset('the chamber monitor at an in-control ARL of 2,000 runs, Phase I of 40 runs: few alarms, only clear faults', {
    ...MONITOR_STRATEGY_DOCUMENT,
    name: 'quiet',
    monitor: { baseline: { minRuns: 40 } },
    budget: { alarmArl: 2000 },
  }),
];

/** The preset of that name, or undefined. */
export function strategyPreset(name: string): StrategyPreset | undefined {
  return STRATEGY_PRESETS.find((p) => p.name === name);
}
