import { normalQuantile } from '@defender/uchart';
import { nearestRank, type DetectionMetrics, type RunOutcome } from './detection-metrics';
import type { Excursion } from './excursions';
import type { EquipmentEvent } from './real-equipment';

/** In-control ARL of a chamber's alarm budget (runs): the default monitor's `arl`. */
export const BUDGET_ARL = 370;
/** Runs after an equipment event whose false alarms are reported apart (they count in the totals too). */
export const AFTER_EVENT_RUNS = 20;

/**
 * Phi(x), the standard normal distribution function: `erfc(-x / sqrt 2) / 2` with the Chebyshev fit of
 * Numerical Recipes' `erfcc` (absolute error below 1e-6: ample for a bound).
 */
export function normalCdf(x: number): number {
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * z);
  const erfc =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851526 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? 1 - erfc / 2 : erfc / 2;
}

/** The shift of an excursion's target statistic in each of its runs, in its sds (a drift ramps to `size`). */
export function shiftsPerRun(x: Excursion): number[] {
  const runs = x.endRun - x.startRun + 1;
  return Array.from({ length: runs }, (_v, i) => (x.kind === 'drift' ? (x.size * (i + 1)) / runs : x.size));
}

/**
 * The oracle bound of an excursion: the probability that a detector which knows the fault's
 * direction and size, under the same per-chamber false-alarm budget (alpha = 1 / ARL per run),
 * catches it before it ends. Per run a one-sided z-test of the target statistic along the known
 * direction at level alpha detects a shift of d sds with probability `Phi(d - z_(1-alpha))`; over the
 * runs i = 1..L of the excursion
 *
 *   P(detect) = 1 - prod_i (1 - Phi(d_i - z_(1-alpha)))
 *
 * (d_i = size for every kind but `drift`, whose shift ramps as size x i / L). The test per run is the
 * most powerful one for a known shift of one statistic with known sd (Neyman-Pearson), so no detector
 * spending the same alpha per run does better run by run; a detector with memory (a CUSUM tuned to d)
 * can beat it on long small shifts, so the bound is a yardstick, not a ceiling.
 */
export function oracleBound(x: Excursion, arl = BUDGET_ARL): number {
  const z = normalQuantile(1 - 1 / arl);
  let miss = 1;
  for (const d of shiftsPerRun(x)) miss *= 1 - normalCdf(d - z);
  return 1 - miss;
}

/** The `real-equipment` profile's figures on top of {@link DetectionMetrics}. */
export interface ProfileMetrics {
  /** Sustained (>= 5 runs) excursions of >= 2 sds: caught before they end, and the p90 delay of those caught. */
  readonly sustained: { readonly injected: number; readonly detected: number; readonly rate: number; readonly delayP90: number | null };
  /**
   * Detected excursions over the sum of their oracle bounds (the bound's expected count). `chance`:
   * the detections false alarms alone would give, `sum 1 - (1 - f)^L` with f the false-alarm rate of
   * the excursion's chamber (an alarm flood "catches" faults too; read the efficiency against it).
   */
  readonly oracle: { readonly expected: number; readonly detected: number; readonly efficiency: number; readonly chance: number };
  /** Sustained closed-loop excursions of >= 2 sds (in the reacting sensor's statistic). */
  readonly closedLoop: { readonly injected: number; readonly detected: number; readonly rate: number };
  /** In-control judged runs within {@link AFTER_EVENT_RUNS} runs after an equipment event, and their alarms. */
  readonly afterEvents: { readonly runs: number; readonly alarms: number; readonly rate: number };
  /** REGIME alarms raised (the engine has none yet). */
  readonly regimeAlarms: number;
}

/**
 * Adds the oracle bound, the sustained and closed-loop detection and the runs after events to a
 * preset's detection metrics. `outcomes` are the same runs `base` was computed from.
 */
export function profileMetrics(
  base: DetectionMetrics,
  outcomes: readonly RunOutcome[],
  events: readonly EquipmentEvent[],
  regimeAlarms: number,
  options: { readonly recoveryRuns?: number; readonly arl?: number } = {},
): ProfileMetrics {
  const recovery = options.recoveryRuns ?? 5;
  const sustained = base.excursions.filter((o) => o.excursion.size >= 2 && o.excursion.endRun - o.excursion.startRun + 1 >= 5);
  const delays = sustained.flatMap((o) => (o.delayRuns === null ? [] : [o.delayRuns]));
  const expected = base.excursions.reduce((a, o) => a + oracleBound(o.excursion, options.arl), 0);
  const closed = sustained.filter((o) => o.excursion.kind === 'closed-loop');
  const closedDetected = closed.filter((o) => o.detected).length;

  const eventsBy = new Map<string, number[]>();
  for (const e of events) eventsBy.set(e.chamber, [...(eventsBy.get(e.chamber) ?? []), e.beforeRun]);
  const xsBy = new Map<string, Excursion[]>();
  for (const o of base.excursions) xsBy.set(o.excursion.chamber, [...(xsBy.get(o.excursion.chamber) ?? []), o.excursion]);
  let afterRuns = 0;
  let afterAlarms = 0;
  const rates = new Map<string, { runs: number; alarms: number }>();
  for (const r of outcomes) {
    if (!r.judged) continue;
    if (xsBy.get(r.chamber)?.some((x) => r.runIndex >= x.startRun && r.runIndex <= x.endRun + recovery)) continue;
    const c = rates.get(r.chamber) ?? { runs: 0, alarms: 0 };
    c.runs++;
    if (r.alarmed) c.alarms++;
    rates.set(r.chamber, c);
    if (!eventsBy.get(r.chamber)?.some((b) => r.runIndex >= b && r.runIndex < b + AFTER_EVENT_RUNS)) continue;
    afterRuns++;
    if (r.alarmed) afterAlarms++;
  }
  const chance = base.excursions.reduce((a, o) => {
    const c = rates.get(o.excursion.chamber);
    const f = c && c.runs > 0 ? c.alarms / c.runs : 0;
    return a + 1 - (1 - f) ** (o.excursion.endRun - o.excursion.startRun + 1);
  }, 0);
  return {
    sustained: { injected: sustained.length, detected: delays.length, rate: sustained.length > 0 ? delays.length / sustained.length : 0, delayP90: nearestRank(delays, 90) },
    oracle: { expected, detected: base.all.detected, efficiency: expected > 0 ? base.all.detected / expected : 0, chance },
    closedLoop: { injected: closed.length, detected: closedDetected, rate: closed.length > 0 ? closedDetected / closed.length : 0 },
    afterEvents: { runs: afterRuns, alarms: afterAlarms, rate: afterRuns > 0 ? afterAlarms / afterRuns : 0 },
    regimeAlarms,
  };
}

/** The last line of `npm run bench:detection -- --profile real-equipment` (issue 49). */
export function profileLine(profile: string, preset: string, m: DetectionMetrics, p: ProfileMetrics): string {
  const pct = (x: number) => (100 * x).toFixed(1);
  return (
    `detection: profile ${profile} preset ${preset} false-alarms ${pct(m.perChamber.mean)}% worst-chamber ${pct(m.perChamber.worst)}% ` +
    `holds-per-1k ${m.holdsPer1k.toFixed(1)} sustained-2sigma ${pct(p.sustained.rate)}% oracle-efficiency ${pct(p.oracle.efficiency)}% ` +
    `closed-loop ${pct(p.closedLoop.rate)}% regime-alarms ${p.regimeAlarms} delay-p90 ${p.sustained.delayP90 ?? 'n/a'} runs`
  );
}
