import { DEFAULT_MONITOR_STATISTICS } from '@defender/defense-rules';
import { STATISTICS } from '@defender/uchart';
import { indicatorMeaning } from './indicator-words';

/** Issue 52, item 1: indicator names such as `ma_min-mean in OverEtch` need a legend in an engineer's words. */
describe('indicatorMeaning: what an indicator measures, in words', () => {
  it.each([
    ['R1|m/Pressure@Main:ma_min-mean', 'Pressure in step Main: how far its 5 s moving average dips below its mean (a dropout of a few seconds)'],
    ['R1|m/RF Fwd@OverEtch:ma_max-mean', 'RF Fwd in step OverEtch: how far its 5 s moving average peaks above its mean (a pulse of a few seconds)'],
    ['R1|m/Flow@Main:mean', 'Flow in step Main: its mean level'],
    ['R1|m/Flow@seg2of4:slope', 'Flow in segment 2 of 4 of the run: its slope (per second)'],
    ['R1|m/Flow@context:noise', 'Flow over the whole run: its sample-to-sample noise'],
    ['R1|m/Flow@Main:mean-run_mean', "Flow in step Main: its mean against the whole run's mean (this step's level, the run's own offset taken out)"],
    ['R1|m/Flow@Main:max-mean', 'Flow in step Main: its highest sample minus its mean level'],
    ['R1|m/Flow@Main:p95-run_median', "Flow in step Main: its 95th percentile (a robust high) minus the whole run's median level"],
  ])('%s reads "%s"', (key, words) => {
    expect(indicatorMeaning(key)).toBe(words);
  });

  it("the model's key and a legacy indicator's key", () => {
    expect(indicatorMeaning('R1|m:model')).toMatch(/^the chamber monitor's model of this recipe/);
    expect(indicatorMeaning('R1|mean/P')).toBe('mean/P');
  });

  it('every uchart statistic and every default monitor statistic has words, not its code name', () => {
    for (const s of [...STATISTICS, ...DEFAULT_MONITOR_STATISTICS]) {
      const words = indicatorMeaning(`R|m/P@Main:${s}`);
      expect(words).toMatch(/^P in step Main: (its|how) /);
      expect(words).not.toBe(`P in step Main: its ${s}`);
    }
  });
});
