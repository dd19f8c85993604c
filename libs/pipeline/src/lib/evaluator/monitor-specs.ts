/**
 * Which indicators the monitor computes for a run: in Phase I every SVID x window x statistic of the
 * layout; once a model judges, only what the model reads (found from the model's keys, so a judged
 * run builds no key of the layout).
 */
import { RECORD_LIMITS } from '@defender/contracts';
import {
  monitorGroup,
  monitorKey,
  monitorLayout,
  type MonitorConfig,
  type MonitorLayout,
  type MonitorModel,
  type MonitorSpec,
  type MonitorStatistic,
} from '@defender/defense-rules';
import type { Trace } from '@defender/uchart';

/** The statistics of a constant window worth checking: a change of any statistic changes one of them. */
const CONSTANT_CHECKS = /:(min|max|mean|max-mean|mean-min)$/;

/** What a Phase I run stores of a window whose samples are all equal (see {@link runMonitorStage}). */
export const CONSTANT_STATISTICS: ReadonlySet<string> = new Set(['mean', 'min', 'max']);

/** The indicators selected for a run (see {@link phaseOneSpecs} and {@link judgedSpecs}). */
export interface SelectedSpecs {
  /** Store keys (`prefix` + monitor key), one per spec of `wanted`. */
  readonly keys: string[];
  readonly wanted: MonitorSpec[];
  /** Per spec of `wanted`: the index of its window's range spec in `windows` (Phase I), else -1. */
  readonly windowOfSpec: number[];
  /** Phase I: a range spec of each window with a wanted spec (tells constant windows apart); else empty. */
  readonly windows: MonitorSpec[];
}

function specOf(key: string, svid: string, w: MonitorLayout['windows'][number], statistic: MonitorStatistic, despike: boolean): MonitorSpec {
  return despike
    ? { key, svid, windowName: w.name, window: w.window, statistic, filter: 'median3' }
    : { key, svid, windowName: w.name, window: w.window, statistic };
}

/** A key over the store's limit, as `skipped` reports it. */
function tooLong(prefix: string, svid: string, window: string, statistic: MonitorStatistic, limit: number): { indicatorKey: string; reason: string } {
  return { indicatorKey: (prefix + monitorKey(svid, window, statistic)).slice(0, limit), reason: `key-too-long: over ${limit} characters` };
}

/**
 * Phase I's indicators of a run: every SVID x window x statistic of the layout, in the order of
 * `monitorSpecs`, with their store keys (`prefix` + monitor key); keys over the store's limit are
 * reported in `skipped` instead.
 */
export function phaseOneSpecs(trace: Trace, cfg: MonitorConfig, prefix: string, skipped: { indicatorKey: string; reason: string }[]): SelectedSpecs {
  const { svids, windows } = monitorLayout(trace, cfg);
  const limit = RECORD_LIMITS.indicatorKey;
  const statistics = cfg.statistics;
  const out: SelectedSpecs = { keys: [], wanted: [], windowOfSpec: [], windows: [] };
  // Indexed loops, not for-of: they run for every SVID window of a run, and iterator results were
  // a third of what selecting a run's indicators allocated (not optimized away).
  for (let i = 0; i < svids.length; i++) {
    const svid = svids[i] as string;
    for (let j = 0; j < windows.length; j++) {
      const w = windows[j] as MonitorLayout['windows'][number];
      const group = prefix + monitorGroup(svid, w.name);
      let range = -1;
      for (let s = 0; s < statistics.length; s++) {
        const statistic = statistics[s] as MonitorStatistic;
        if (group.length + statistic.length > limit) {
          skipped.push(tooLong(prefix, svid, w.name, statistic, limit));
          continue;
        }
        const key = group + statistic;
        if (range < 0) {
          out.windows.push(specOf('', svid, w, 'range', cfg.despike));
          range = out.windows.length - 1;
        }
        out.keys.push(key);
        out.wanted.push(specOf(key.slice(prefix.length), svid, w, statistic, cfg.despike));
        out.windowOfSpec.push(range);
      }
    }
  }
  return out;
}

/** Index of each statistic of a strategy's list (a strategy has a handful). */
function statisticIndex(statistics: readonly string[]): ReadonlyMap<string, number> {
  const index = new Map<string, number>();
  statistics.forEach((s, i) => {
    if (!index.has(s)) index.set(s, i);
  });
  return index;
}

/**
 * The indicators a model judges in a run: its charted indicators and the checked statistics of its
 * constant windows that this run's layout has, in the order of `monitorSpecs`, each with its store key
 * (the model's own key string). Found from the model's keys, so a judged run builds no key of the
 * layout: a key `<prefix>m/<svid>@<window>:<statistic>` is split at each window name of the layout that
 * ends its group (an SVID may hold `@`), and kept when the SVID is the layout's. Keys of the layout
 * over the store's limit are reported in `skipped`, as in Phase I (found by their length alone).
 */
export function judgedSpecs(trace: Trace, cfg: MonitorConfig, prefix: string, model: MonitorModel, skipped: { indicatorKey: string; reason: string }[]): SelectedSpecs {
  const { svids, windows } = monitorLayout(trace, cfg);
  const limit = RECORD_LIMITS.indicatorKey;
  const statistics = cfg.statistics;
  const base = prefix.length + 2; // `${prefix}m/`
  let longest = 0;
  for (let s = 0; s < statistics.length; s++) longest = Math.max(longest, (statistics[s] as string).length);
  let longestWindow = 0;
  for (let j = 0; j < windows.length; j++) longestWindow = Math.max(longestWindow, (windows[j] as MonitorLayout['windows'][number]).name.length);
  const svidIndex = new Map<string, number>();
  for (let i = 0; i < svids.length; i++) {
    const svid = svids[i] as string;
    if (!svidIndex.has(svid)) svidIndex.set(svid, i);
    if (base + svid.length + 1 + longestWindow + 1 + longest <= limit) continue;
    for (let j = 0; j < windows.length; j++) {
      const name = (windows[j] as MonitorLayout['windows'][number]).name;
      for (let s = 0; s < statistics.length; s++) {
        const statistic = statistics[s] as MonitorStatistic;
        if (base + svid.length + 1 + name.length + 1 + statistic.length > limit) skipped.push(tooLong(prefix, svid, name, statistic, limit));
      }
    }
  }
  const stats = statisticIndex(statistics);
  // Each match as one number, ordered as monitorSpecs orders its indicators.
  const codes: number[] = [];
  const matched: string[] = [];
  const match = (key: string): void => {
    if (!key.startsWith(prefix) || key.charCodeAt(prefix.length) !== 0x6d /* m */ || key.charCodeAt(prefix.length + 1) !== 0x2f /* / */) return;
    const colon = key.lastIndexOf(':');
    const s = colon > base ? stats.get(key.slice(colon + 1)) : undefined;
    if (s === undefined) return;
    for (let j = 0; j < windows.length; j++) {
      const name = (windows[j] as MonitorLayout['windows'][number]).name;
      const at = colon - name.length - 1;
      if (at <= base || key.charCodeAt(at) !== 0x40 /* @ */ || !key.startsWith(name, at + 1)) continue;
      const i = svidIndex.get(key.slice(base, at));
      if (i === undefined) continue;
      codes.push((i * windows.length + j) * statistics.length + s);
      matched.push(key);
    }
  };
  const variables = model.variables;
  for (let k = 0; k < variables.length; k++) match(variables[k] as string);
  const notCharted = model.notCharted;
  for (let k = 0; k < notCharted.length; k++) {
    const nc = notCharted[k] as MonitorModel['notCharted'][number];
    if (nc.reason === 'constant' && CONSTANT_CHECKS.test(nc.key)) match(nc.key);
  }
  const order = codes.map((_, k) => k).sort((a, b) => (codes[a] as number) - (codes[b] as number));
  const out: SelectedSpecs = { keys: [], wanted: [], windowOfSpec: [], windows: [] };
  let last = -1;
  for (let r = 0; r < order.length; r++) {
    const k = order[r] as number;
    const code = codes[k] as number;
    if (code === last) continue; // a key both charted and a constant check, or listed twice
    last = code;
    const s = code % statistics.length;
    const j = Math.floor(code / statistics.length) % windows.length;
    const i = Math.floor(code / statistics.length / windows.length);
    const key = matched[k] as string;
    out.keys.push(key);
    out.wanted.push(specOf(key.slice(prefix.length), svids[i] as string, windows[j] as MonitorLayout['windows'][number], statistics[s] as MonitorStatistic, cfg.despike));
    out.windowOfSpec.push(-1);
  }
  return out;
}

