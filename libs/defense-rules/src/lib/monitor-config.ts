/**
 * The chamber monitor's configuration and naming: the statistics it may compute (a uchart statistic, a
 * difference `a-b` of two, or a within-run contrast `a-run_b`), a strategy's monitor with every default
 * applied, the false-alarm budget, and the history keys of its indicators and model (monitor.ts has the
 * overview).
 */
import type { EquipmentEventKind } from '@defender/contracts';
import { STATISTICS, type StatisticName } from '@defender/uchart';

/**
 * A monitored statistic: one of the uchart statistics, the difference `a-b` of two of them over the
 * window (a derived indicator such as `max-mean`, the peak above the window's level), or `a-run_b`,
 * statistic a of the window minus statistic b of the whole run of the same SVID (a within-run
 * contrast such as `mean-run_mean`, the window's level against the run's).
 */
export type MonitorStatistic = StatisticName | `${StatisticName}-${StatisticName}` | `${StatisticName}-run_${StatisticName}`;

/** Prefix of the second part of `a-run_b`: statistic b over the whole run (the context window). */
const RUN_PREFIX = 'run_';

/**
 * The statistics a monitor computes per SVID and window unless told otherwise: the level (`mean`), the
 * within-run noise from successive differences (`noise`, blind to ramps and settling shapes, where
 * `std` is not), the peak and the trough of a 5 s moving average above and below the level
 * (`ma_max-mean`, `ma_min-mean`: a pulse or dropout of a few seconds moves them by many of their
 * sds, and taking the level out removes the run-to-run level variation that dominates a smoothed
 * extreme), the slope, robust extremes (`p05`, `p95`), the integral, the duration, and the window's
 * level against the run's (`mean-run_mean`: a run-to-run level offset of a sensor moves the whole run,
 * so the contrast carries none of it and a step-level fault stands out; decision 14). Measured on
 * bench:detection against the earlier mean, std, min, max, slope, first, last, p05, p95, integral,
 * duration: more excursions caught at no more false alarms; raw min / max / first / last, whose
 * extreme-value tails spent the budget, and std are left out (docs/adr/0005-chamber-monitor.md,
 * decision 9). Any uchart statistic, or the difference `a-b` of two, can be listed instead.
 */
export const DEFAULT_MONITOR_STATISTICS: readonly MonitorStatistic[] = [
  'mean',
  'noise',
  'ma_min-mean',
  'ma_max-mean',
  'slope',
  'p05',
  'p95',
  'integral',
  'duration',
  'mean-run_mean',
];

const STATISTIC_SET: ReadonlySet<string> = new Set(STATISTICS);

/** The uchart statistics a monitored statistic is made of, or undefined when it is not one. */
export function statisticParts(s: string): readonly [StatisticName] | readonly [StatisticName, StatisticName] | undefined {
  if (STATISTIC_SET.has(s)) return [s as StatisticName];
  const dash = s.indexOf('-');
  if (dash <= 0) return undefined;
  const a = s.slice(0, dash);
  const b = s.slice(dash + 1);
  if (b.startsWith(RUN_PREFIX)) {
    const whole = b.slice(RUN_PREFIX.length);
    return STATISTIC_SET.has(a) && STATISTIC_SET.has(whole) ? [a as StatisticName, whole as StatisticName] : undefined;
  }
  return STATISTIC_SET.has(a) && STATISTIC_SET.has(b) && a !== b ? [a as StatisticName, b as StatisticName] : undefined;
}

/** Whether a monitored statistic's second part is taken over the whole run (`a-run_b`). */
export function isRunContrast(s: string): boolean {
  const dash = s.indexOf('-');
  return dash > 0 && s.startsWith(RUN_PREFIX, dash + 1);
}

/** A strategy's monitor, with every default applied. */
export interface MonitorConfig {
  /** `*` for every SVID of the trace, or the SVIDs to monitor. */
  readonly svids: '*' | readonly string[];
  /** `steps`: every recipe step (equal segments without step markers); `context`: the whole trace only. */
  readonly windows: 'steps' | 'context';
  /** Equal time windows of a trace without step markers. */
  readonly segments: number;
  readonly statistics: readonly MonitorStatistic[];
  /** Statistics of the samples after a running median of 3, which removes single-sample glitches. */
  readonly despike: boolean;
  /**
   * Phase I: `minRuns` runs; then, once `extendTo` runs without an alarm exist (Phase I included), the
   * model is fitted again on them (a new version), or never (`false`).
   */
  readonly baseline: { readonly minRuns: number; readonly extendTo: number | false };
  /**
   * Slow in-control drift (tool ageing between maintenances) followed by an EWMA of each SVID's level
   * offset over the runs that raised no alarm (weight `lambda` per run; level-centre.ts), or off (the
   * Phase I mean stays the centre).
   */
  readonly adapt: { readonly lambda: number } | false;
  /** Univariate limits per indicator (a share of the budget). */
  readonly univariate: boolean;
  /** PCA: components explaining `variance` of the autoscaled Phase I, at most `maxComponents`. */
  readonly pca: { readonly variance: number; readonly maxComponents: number };
  /** MEWMA on the standardised PCA scores, or off. */
  readonly mewma: { readonly lambda: number } | false;
  readonly action: 'ALARM' | 'HOLD_CHAMBER';
  /**
   * What an equipment event of each kind does to the chamber's monitor (ADR 0019, decision 4):
   * `none`; `reset-memory` (the MEWMA starts again from 0); `recentre` (the model keeps its correlation
   * structure and limits; its centre is learnt again from the runs after the event, which are judged
   * with that estimate's error); `rebaseline` (a new Phase I from the next run, a new model version).
   * Every kind is listed (the defaults fill what a strategy leaves out).
   */
  readonly events: Readonly<Record<EquipmentEventKind, EventAction>>;
  /**
   * A regime change without its event (ADR 0019): a run whose level limits are exceeded on at least
   * `share` of the model's sensors (and at least `min` of them) raises `REGIME` and the model is
   * re-centred from the next runs, as after an event; `false`: such runs alarm as any other.
   */
  readonly regime: { readonly share: number; readonly min: number } | false;
  /**
   * Declared resolution (one count, in the SVID's unit, > 0) per SVID; an SVID not listed has its
   * lattice learnt in Phase I (lattice.ts), or none. See {@link fitMonitorModel}.
   */
  readonly resolution?: Readonly<Record<string, number>>;
}

/** What an equipment event does to the monitor of a recipe (see {@link MonitorConfig.events}). */
export type EventAction = 'none' | 'reset-memory' | 'recentre' | 'rebaseline';
export const EVENT_ACTIONS: readonly EventAction[] = ['none', 'reset-memory', 'recentre', 'rebaseline'];

/**
 * The default action per event kind. A maintenance, a clean, a part change or a long idle (a new
 * production period) moves the levels of many sensors together while the tool stays the tool: the
 * model keeps its correlation structure and limits and learns its centre again from the runs after
 * the event (`recentre`). Seasoning leaves the levels but not the recent memory: the MEWMA starts again.
 * A recipe change re-baselines that recipe only; a note changes nothing. Measured on bench:detection's
 * real-equipment profile (ADR 0019).
 */
export const DEFAULT_EVENT_ACTIONS: Readonly<Record<EquipmentEventKind, EventAction>> = {
  pm: 'recentre',
  clean: 'recentre',
  'part-change': 'recentre',
  seasoning: 'reset-memory',
  'recipe-change': 'rebaseline',
  'long-idle': 'recentre',
  note: 'none',
};

/** The false-alarm budget of a chamber: in-control ARL of an alarm (runs). */
export interface Budget {
  readonly alarmArl: number;
}

/** History key of the monitor model's own point (T², SPE, MEWMA state) and of its limit set. */
export const MONITOR_MODEL_KEY = 'm:model';

/**
 * What the history keys of one SVID window's indicators start with: `monitorKey` is this and the
 * statistic (a statistic name holds no `:`). Built once per window where a run builds many keys.
 */
export function monitorGroup(svid: string, window: string): string {
  return `m/${svid}@${window}:`;
}

/** History key of one monitored indicator. */
export function monitorKey(svid: string, window: string, statistic: MonitorStatistic): string {
  return monitorGroup(svid, window) + statistic;
}
