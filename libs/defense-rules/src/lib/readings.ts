/**
 * A new run's input to `evaluate` (its context and readings), and the readings of a strategy's
 * indicators for a run's trace.
 */
import { isAttributeChart, type IndicatorCalculator, type IndicatorSpec, type Trace } from '@defender/uchart';
import type { DefenseStrategy, IndicatorConfig } from './strategy';

/** Who / what a run belongs to, copied into every violation. */
export interface AlarmContext {
  readonly toolId?: string;
  readonly chamberId?: string;
  readonly recipe?: string;
}

/**
 * One indicator value of a new run. `value` is the indicator value (a count for attribute charts),
 * `exposure` the point's size for p / np / u charts. A `missing` reading records why there is no value.
 */
export interface Reading {
  /** History key: the indicator id, or `<id>/<svid>` for an indicator over every SVID (`svid: "*"`). */
  readonly key: string;
  readonly indicatorId: string;
  readonly svid: string;
  readonly value?: number;
  readonly exposure?: number;
  readonly missing?: { readonly reason: string; readonly detail: string };
}

/** A run to evaluate: its id, context and readings. */
export interface NewRun {
  readonly runId: string;
  readonly context?: AlarmContext;
  readonly readings: readonly Reading[];
}

/** The history key of an indicator for one SVID. */
export function indicatorKey(config: IndicatorConfig, svid: string): string {
  return config.svid === '*' ? `${config.id}/${svid}` : config.id;
}

/**
 * The readings of a strategy's indicators for one run's trace (a `*` SVID expands to every SVID of the
 * trace). Indicators with no point (unknown SVID / step, empty window, all samples NaN, ...) become
 * `missing` readings. For p / np / u charts the exposure is the window's sample count (valid + missing)
 * or its duration in seconds, per the indicator's `exposure`.
 */
export function readingsFromTrace(
  trace: Trace,
  strategy: DefenseStrategy,
  calculator: IndicatorCalculator,
): Reading[] {
  const specs: IndicatorSpec[] = [];
  const meta: { cfg: IndicatorConfig; svid: string }[] = [];
  for (const cfg of strategy.indicators) {
    const svids = cfg.svid === '*' ? [...trace.svids.keys()] : [cfg.svid];
    for (const svid of svids) {
      specs.push({ svid, window: cfg.window, statistic: cfg.statistic });
      meta.push({ cfg, svid });
      if (cfg.exposure === 'window-seconds' && isAttributeChart(cfg.chart)) {
        specs.push({ svid, window: cfg.window, statistic: 'duration' });
        meta.push({ cfg, svid: '\u0000duration' });
      }
    }
  }
  const outcomes = calculator.compute(trace, specs);
  const readings: Reading[] = [];
  for (let i = 0; i < specs.length; i++) {
    const { cfg, svid } = meta[i];
    if (svid === '\u0000duration') continue;
    const o = outcomes[i];
    const key = indicatorKey(cfg, svid);
    if (o.kind === 'no-point') {
      readings.push({ key, indicatorId: cfg.id, svid, missing: { reason: o.reason, detail: o.detail } });
      continue;
    }
    let exposure: number | undefined;
    if (cfg.chart.type === 'p' || cfg.chart.type === 'np' || cfg.chart.type === 'u') {
      if (cfg.exposure === 'window-seconds') {
        const d = outcomes[i + 1];
        exposure = d.kind === 'point' ? d.value : undefined;
      } else {
        exposure = o.n + o.nMissing;
      }
    }
    readings.push({
      key,
      indicatorId: cfg.id,
      svid,
      value: o.value,
      ...(exposure !== undefined ? { exposure } : {}),
    });
  }
  return readings;
}
