import { DEFAULT_STRATEGY_DOCUMENT } from './default-strategy';
import { STRATEGY_PRESETS, strategyPreset } from './presets';
import { DEFAULT_STRATEGY, resolveStrategy } from './strategy';

describe('strategy presets', () => {
  it('ships presets that parse, the default first, with the budget each states', () => {
    expect(STRATEGY_PRESETS.map((p) => p.name)).toEqual(['default', 'sensitive', 'quiet', 'western-electric']);
    expect(strategyPreset('default')?.strategy.budget.alarmArl).toBe(370);
    expect(strategyPreset('sensitive')?.strategy.budget.alarmArl).toBe(100);
    expect(strategyPreset('quiet')?.strategy.budget.alarmArl).toBe(2000);
    expect(strategyPreset('quiet')?.strategy.monitor?.baseline.minRuns).toBe(40);
    expect(strategyPreset('western-electric')?.strategy.monitor).toBeUndefined();
    expect(strategyPreset('nope')).toBeUndefined();
  });

  it('gives a chamber without a strategy the chamber monitor at an ARL of 370 runs, 3 alarmed runs in 5 -> hold', () => {
    expect(DEFAULT_STRATEGY.name).toBe('default');
    expect(DEFAULT_STRATEGY.indicators).toEqual([]);
    expect(DEFAULT_STRATEGY.monitor).toMatchObject({ svids: '*', windows: 'steps', despike: true, baseline: { minRuns: 30, extendTo: 90 } });
    expect(DEFAULT_STRATEGY.budget).toEqual({ alarmArl: 370 });
    expect(DEFAULT_STRATEGY.escalation).toEqual([{ alarms: 3, withinRuns: 5, action: 'HOLD_CHAMBER' }]);
    expect(strategyPreset('default')?.document).toBe(DEFAULT_STRATEGY_DOCUMENT);
    expect(resolveStrategy([], { chamber: 'T9:C1' })).toBe(DEFAULT_STRATEGY);
  });

  it('charts mean and std of every SVID with the Western Electric rules in the classic preset', () => {
    const we = strategyPreset('western-electric')?.strategy;
    expect(we?.indicators.map((i) => [i.id, i.svid, i.statistic, i.chart.type])).toEqual([
      ['mean', '*', 'mean', 'individuals'],
      ['std', '*', 'std', 'individuals'],
    ]);
    expect(we?.indicators[0]?.rules.map((r) => r.id)).toEqual(['WE1', 'WE2', 'WE3', 'WE4']);
    expect(we?.escalation).toEqual([{ alarms: 2, withinRuns: 5, action: 'HOLD_CHAMBER' }]);
  });
});
