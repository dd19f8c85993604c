/**
 * The chamber monitor's indicators for a trace: its SVIDs x windows x statistics (layout and specs) and
 * their values, each (SVID, window) read once for all its statistics (monitor.ts has the overview).
 */
import {
  PERCENTILE_STATISTICS,
  SHAPE_STATISTICS,
  windowValue,
  type IndicatorCalculator,
  type StatisticName,
  type Trace,
  type WindowSpec,
  type WindowStatistics,
} from '@defender/uchart';
import { isRunContrast, monitorKey, statisticParts, type MonitorConfig, type MonitorStatistic } from './monitor-config';

/** One indicator of the monitor for a trace. */
export interface MonitorSpec {
  readonly key: string;
  readonly svid: string;
  /** Step name, `seg<i>of<n>`, or `context`. */
  readonly windowName: string;
  readonly window: WindowSpec;
  readonly statistic: MonitorStatistic;
  readonly filter?: 'median3';
}

/** The SVIDs and windows the monitor reads of a trace; its indicators are every SVID x window x statistic. */
export interface MonitorLayout {
  readonly svids: readonly string[];
  /** Window name (step name, `seg<i>of<n>` or `context`) and its spec, in the trace's order. */
  readonly windows: readonly { readonly name: string; readonly window: WindowSpec }[];
}

/** The SVIDs and windows of a trace under `cfg` (see {@link monitorSpecs}). */
export function monitorLayout(trace: Trace, cfg: MonitorConfig): MonitorLayout {
  const svids = cfg.svids === '*' ? [...trace.svids.keys()] : cfg.svids;
  const windows: { name: string; window: WindowSpec }[] = [];
  if (cfg.windows === 'context') windows.push({ name: 'context', window: { kind: 'context' } });
  else if (trace.steps.length > 0) {
    for (const s of trace.steps) windows.push({ name: s.name, window: { kind: 'step', step: s.name } });
  } else {
    for (let i = 0; i < cfg.segments; i++)
      windows.push({ name: `seg${i + 1}of${cfg.segments}`, window: { kind: 'segment', index: i, of: cfg.segments } });
  }
  return { svids, windows };
}

/** The monitor's indicators for a trace, in a stable order (SVID, window, statistic). */
export function monitorSpecs(trace: Trace, cfg: MonitorConfig): MonitorSpec[] {
  const { svids, windows } = monitorLayout(trace, cfg);
  const out: MonitorSpec[] = [];
  for (const svid of svids)
    for (const w of windows)
      for (const statistic of cfg.statistics)
        out.push({
          key: monitorKey(svid, w.name, statistic),
          svid,
          windowName: w.name,
          window: w.window,
          statistic,
          ...(cfg.despike ? { filter: 'median3' as const } : {}),
        });
  return out;
}

/** The window of the run-level part of a contrast (`a-run_b`). */
const RUN_WINDOW: WindowSpec = { kind: 'context' };
const RUN_WINDOW_NAME = 'context';
const PERCENTILE_SET: ReadonlySet<string> = new Set(PERCENTILE_STATISTICS);
const SHAPE_SET: ReadonlySet<string> = new Set(SHAPE_STATISTICS);
/** A statistic's parts (see {@link statisticParts}, {@link isRunContrast}), remembered in `seen` (a call's own memo: a strategy has a handful). */
function partsOf(statistic: string, seen: Map<string, { readonly parts: readonly StatisticName[]; readonly run: boolean }>): { readonly parts: readonly StatisticName[]; readonly run: boolean } {
  let p = seen.get(statistic);
  if (!p) {
    const parts = statisticParts(statistic);
    if (!parts) throw new RangeError(`unknown monitor statistic ${statistic}`);
    p = { parts, run: isRunContrast(statistic) };
    seen.set(statistic, p);
  }
  return p;
}

/**
 * The values of `specs` for a trace (undefined where the trace gives none: unknown SVID or step, empty
 * window, no valid sample, ...). Each (SVID, window) is read once for all its statistics (windows are
 * told apart by SVID and window name), derived statistics are taken from their parts, and nothing is
 * allocated per indicator beyond the result: a chamber of a hundred sensors has thousands of them.
 */
export function monitorValues(trace: Trace, specs: readonly MonitorSpec[], calculator: IndicatorCalculator): (number | undefined)[] {
  const requests: { svid: string; window: WindowSpec; filter?: 'median3'; percentiles: boolean; shape: boolean }[] = [];
  const bySvid = new Map<string, Map<string, number>>();
  const seen = new Map<string, { readonly parts: readonly StatisticName[]; readonly run: boolean }>();
  const windowOf = (svid: string, name: string, window: WindowSpec, filter: 'median3' | undefined, statistic: StatisticName): number => {
    let windows = bySvid.get(svid);
    if (!windows) bySvid.set(svid, (windows = new Map()));
    let i = windows.get(name);
    if (i === undefined) {
      i = requests.length;
      windows.set(name, i);
      requests.push({ svid, window, ...(filter ? { filter } : {}), percentiles: false, shape: false });
    }
    const r = requests[i] as (typeof requests)[number];
    if (PERCENTILE_SET.has(statistic)) r.percentiles = true;
    else if (SHAPE_SET.has(statistic)) r.shape = true;
    return i;
  };
  const n = specs.length;
  // Per spec: the window and statistic of its value, and of the part subtracted from it (-1: none).
  const firstWindow = new Int32Array(n);
  const secondWindow = new Int32Array(n).fill(-1);
  const firstStatistic: StatisticName[] = new Array(n);
  const secondStatistic: StatisticName[] = new Array(n);
  for (let k = 0; k < n; k++) {
    const spec = specs[k] as MonitorSpec;
    const { parts, run } = partsOf(spec.statistic, seen);
    const a = parts[0] as StatisticName;
    firstWindow[k] = windowOf(spec.svid, spec.windowName, spec.window, spec.filter, a);
    firstStatistic[k] = a;
    if (parts.length === 2) {
      const b = parts[1] as StatisticName;
      secondWindow[k] = run
        ? windowOf(spec.svid, RUN_WINDOW_NAME, RUN_WINDOW, spec.filter, b)
        : windowOf(spec.svid, spec.windowName, spec.window, spec.filter, b);
      secondStatistic[k] = b;
    }
  }
  const windows = calculator.computeWindows(trace, requests);
  const out: (number | undefined)[] = new Array(n);
  for (let k = 0; k < n; k++) {
    const a = windowValue(windows[firstWindow[k] as number] as WindowStatistics, firstStatistic[k] as StatisticName);
    const second = secondWindow[k] as number;
    if (second < 0 || a === undefined) {
      out[k] = a;
      continue;
    }
    const b = windowValue(windows[second] as WindowStatistics, secondStatistic[k] as StatisticName);
    out[k] = b === undefined ? undefined : a - b;
  }
  return out;
}
