/**
 * The chamber monitor's indicators for a trace: its SVIDs x windows x statistics (layout and specs) and
 * their values, each (SVID, window) read once for all its statistics (monitor.ts has the overview).
 */
import {
  LEVEL_STATISTICS,
  PERCENTILE_STATISTICS,
  SHAPE_STATISTICS,
  windowValue,
  type IndicatorCalculator,
  type StatisticName,
  type Trace,
  type WindowRequest,
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
/** What a statistic part asks of its window: percentiles, shape statistics, more than its level. */
const WANTS_PERCENTILES = 1;
const WANTS_SHAPE = 2;
const WANTS_MORE_THAN_LEVEL = 4;
function wantsOf(statistic: StatisticName): number {
  return (
    (PERCENTILE_STATISTICS.includes(statistic) ? WANTS_PERCENTILES : 0) |
    (SHAPE_STATISTICS.includes(statistic) ? WANTS_SHAPE : 0) |
    (LEVEL_STATISTICS.includes(statistic) ? 0 : WANTS_MORE_THAN_LEVEL)
  );
}

/** A monitored statistic as its parts (see {@link statisticParts}, {@link isRunContrast}) and what each asks of its window. */
interface StatisticPlan {
  readonly first: StatisticName;
  readonly firstWants: number;
  /** The part subtracted, if any; taken over the whole run when `run`. */
  readonly second: StatisticName | undefined;
  readonly secondWants: number;
  readonly run: boolean;
}

/** A statistic's plan, remembered in `seen` (a call's own memo: a strategy has a handful). */
function planOf(statistic: string, seen: Map<string, StatisticPlan>): StatisticPlan {
  let p = seen.get(statistic);
  if (!p) {
    const parts = statisticParts(statistic);
    if (!parts) throw new RangeError(`unknown monitor statistic ${statistic}`);
    const second = parts.length === 2 ? parts[1] : undefined;
    p = { first: parts[0], firstWants: wantsOf(parts[0]), second, secondWants: second ? wantsOf(second) : 0, run: isRunContrast(statistic) };
    seen.set(statistic, p);
  }
  return p;
}

/**
 * The values of `specs` for a trace (undefined where the trace gives none: unknown SVID or step, empty
 * window, no valid sample, ...). Each (SVID, window) is read once for all its statistics (windows are
 * told apart by SVID and window name), derived statistics are taken from their parts, and nothing is
 * allocated per indicator beyond the result: a chamber of a hundred sensors has thousands of them.
 * A window used for its level alone (the run part of `mean-run_mean`) is asked for its level only.
 */
export function monitorValues(trace: Trace, specs: readonly MonitorSpec[], calculator: IndicatorCalculator): (number | undefined)[] {
  const windows: { svid: string; window: WindowSpec; filter: 'median3' | undefined }[] = [];
  const wants: number[] = [];
  const bySvid = new Map<string, Map<string, number>>();
  const seen = new Map<string, StatisticPlan>();
  const windowOf = (svid: string, name: string, window: WindowSpec, filter: 'median3' | undefined): number => {
    let named = bySvid.get(svid);
    if (!named) bySvid.set(svid, (named = new Map()));
    let i = named.get(name);
    if (i === undefined) {
      i = windows.length;
      named.set(name, i);
      windows.push({ svid, window, filter });
      wants.push(0);
    }
    return i;
  };
  const n = specs.length;
  // Per spec: the window and statistic of its value, and of the part subtracted from it (-1: none).
  const firstWindow = new Int32Array(n);
  const secondWindow = new Int32Array(n).fill(-1);
  const plans: StatisticPlan[] = new Array(n);
  // Specs come ordered by SVID and window: the window of the spec before is looked up first.
  let lastSvid: string | undefined;
  let lastName: string | undefined;
  let last = -1;
  let runSvid: string | undefined;
  let run = -1;
  for (let k = 0; k < n; k++) {
    const spec = specs[k] as MonitorSpec;
    const plan = planOf(spec.statistic, seen);
    plans[k] = plan;
    if (spec.svid !== lastSvid || spec.windowName !== lastName) {
      last = windowOf(spec.svid, spec.windowName, spec.window, spec.filter);
      lastSvid = spec.svid;
      lastName = spec.windowName;
    }
    firstWindow[k] = last;
    wants[last] = (wants[last] as number) | plan.firstWants;
    if (plan.second === undefined) continue;
    let second = last;
    if (plan.run) {
      if (spec.svid !== runSvid) {
        run = windowOf(spec.svid, RUN_WINDOW_NAME, RUN_WINDOW, spec.filter);
        runSvid = spec.svid;
      }
      second = run;
    }
    secondWindow[k] = second;
    wants[second] = (wants[second] as number) | plan.secondWants;
  }
  const requests: WindowRequest[] = windows.map((w, i) => {
    const want = wants[i] as number;
    return {
      svid: w.svid,
      window: w.window,
      ...(w.filter ? { filter: w.filter } : {}),
      percentiles: (want & WANTS_PERCENTILES) !== 0,
      shape: (want & WANTS_SHAPE) !== 0,
      levelOnly: (want & WANTS_MORE_THAN_LEVEL) === 0,
    };
  });
  const computed = calculator.computeWindows(trace, requests);
  const out: (number | undefined)[] = new Array(n);
  for (let k = 0; k < n; k++) {
    const plan = plans[k] as StatisticPlan;
    const a = windowValue(computed[firstWindow[k] as number] as WindowStatistics, plan.first);
    const second = secondWindow[k] as number;
    if (second < 0 || a === undefined) {
      out[k] = a;
      continue;
    }
    const b = windowValue(computed[second] as WindowStatistics, plan.second as StatisticName);
    out[k] = b === undefined ? undefined : a - b;
  }
  return out;
}
