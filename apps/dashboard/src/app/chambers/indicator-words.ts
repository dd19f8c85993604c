import { MOVING_AVERAGE_SECONDS } from '@defender/uchart';
import { MODEL_SUFFIX, parseMonitorKey } from './monitor-keys';

/** Each uchart statistic in a process engineer's words (of one SVID over one window). */
const STATISTIC_WORDS: Readonly<Record<string, string>> = {
  n: 'number of samples',
  n_missing: 'number of missing samples',
  mean: 'mean level',
  std: 'standard deviation',
  min: 'lowest sample',
  max: 'highest sample',
  range: 'range (highest - lowest sample)',
  first: 'first sample',
  last: 'last sample',
  slope: 'slope (per second)',
  integral: 'integral (value x seconds)',
  duration: 'duration (seconds)',
  median: 'median level',
  p05: '5th percentile (a robust low)',
  p95: '95th percentile (a robust high)',
  noise: 'sample-to-sample noise',
  ma_max: `peak of its ${MOVING_AVERAGE_SECONDS} s moving average`,
  ma_min: `trough of its ${MOVING_AVERAGE_SECONDS} s moving average`,
};

/** Differences with a reading of their own (the monitor's defaults). */
const DIFFERENCE_WORDS: Readonly<Record<string, string>> = {
  'ma_max-mean': `how far its ${MOVING_AVERAGE_SECONDS} s moving average peaks above its mean (a pulse of a few seconds)`,
  'ma_min-mean': `how far its ${MOVING_AVERAGE_SECONDS} s moving average dips below its mean (a dropout of a few seconds)`,
  'mean-run_mean': "its mean against the whole run's mean (this step's level, the run's own offset taken out)",
};

/** Where a window is: `in step Main`, `in segment 2 of 4`, `over the whole run`. */
function windowWords(window: string): string {
  if (window === 'context') return 'over the whole run';
  const seg = /^seg(\d+)of(\d+)$/.exec(window);
  if (seg) return `in segment ${seg[1]} of ${seg[2]} of the run`;
  return `in step ${window}`;
}

function statisticWords(statistic: string): string {
  const known = DIFFERENCE_WORDS[statistic] ?? STATISTIC_WORDS[statistic];
  if (known) return known;
  const dash = statistic.indexOf('-');
  if (dash > 0) {
    const a = statistic.slice(0, dash);
    const b = statistic.slice(dash + 1);
    if (b.startsWith('run_')) return `its ${STATISTIC_WORDS[a] ?? a} minus the whole run's ${STATISTIC_WORDS[b.slice(4)] ?? b.slice(4)}`;
    return `its ${STATISTIC_WORDS[a] ?? a} minus its ${STATISTIC_WORDS[b] ?? b}`;
  }
  return statistic;
}

/**
 * What an indicator measures, in a sentence an engineer reads without knowing the key grammar:
 * `R1|m/Pressure@Main:ma_min-mean` -> `Pressure in step Main: how far its 5 s moving average dips below
 * its mean (a dropout of a few seconds)`. The model's key reads as the chamber monitor's model; a key of
 * another kind (a legacy indicator) is returned after its recipe, as its label is.
 */
export function indicatorMeaning(key: string): string {
  if (key.endsWith(MODEL_SUFFIX)) return "the chamber monitor's model of this recipe (T², SPE and MEWMA over all its indicators)";
  const m = parseMonitorKey(key);
  if (!m) {
    const bar = key.indexOf('|');
    return bar >= 0 ? key.slice(bar + 1) : key;
  }
  const words = statisticWords(m.statistic);
  const sentence = words.startsWith('its ') || words.startsWith('how ') ? words : `its ${words}`;
  return `${m.svid} ${windowWords(m.window)}: ${sentence}`;
}
