import { MONITOR_MODEL_KEY } from '@defender/defense-rules';

/** The parts of a chamber-monitor indicator key `<recipe>|m/<svid>@<window>:<statistic>`. */
export interface MonitorKeyParts {
  readonly recipe: string;
  readonly svid: string;
  /** Recipe step, `seg<i>of<n>` or `context`. */
  readonly window: string;
  readonly statistic: string;
}

/** Suffix of a chamber-monitor model key (`<recipe>|m:model`). */
export const MODEL_SUFFIX = `|${MONITOR_MODEL_KEY}`;
// The statistic: a uchart statistic, a difference `a-b` over the window or `a-run_b` against the run.
const MONITOR_KEY = /^m\/(.*)@([^@:]*):([a-z0-9_]+(?:-[a-z0-9_]+)?)$/;

/** `<recipe>|m/<svid>@<window>:<statistic>` -> parts; null for any other key (the model's key included). */
export function parseMonitorKey(key: string): MonitorKeyParts | null {
  const bar = key.indexOf('|');
  const m = MONITOR_KEY.exec(bar >= 0 ? key.slice(bar + 1) : key);
  return m ? { recipe: bar >= 0 ? key.slice(0, bar) : '', svid: m[1] as string, window: m[2] as string, statistic: m[3] as string } : null;
}

/** How a person reads an indicator key: `Pressure mean in Main` for a monitor key, `model` for its model, else the key after the recipe. */
export function indicatorLabel(key: string): string {
  if (key.endsWith(MODEL_SUFFIX)) return 'model';
  const m = parseMonitorKey(key);
  if (m) return `${m.svid} ${m.statistic} in ${m.window}`;
  const bar = key.indexOf('|');
  return bar >= 0 ? key.slice(bar + 1) : key;
}

/** The recipe of a chamber-monitor key (an indicator's or the model's), else null. */
export function monitorRecipeOf(key: string): string | null {
  const bar = key.indexOf('|');
  if (bar < 0) return null;
  const rest = key.slice(bar + 1);
  return rest === MONITOR_MODEL_KEY || rest.startsWith('m/') ? key.slice(0, bar) : null;
}
