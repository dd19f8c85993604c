import type { Excursion } from './excursions';

/**
 * What happened to one simulated run, as a detection report needs it. `judged`: the run was judged
 * against frozen control limits (Phase I is over for the chamber); Phase I runs never count.
 */
export interface RunOutcome {
  readonly chamber: string;
  /** 0-based run index of the chamber. */
  readonly runIndex: number;
  readonly judged: boolean;
  /** At least one alarm was raised for the run. */
  readonly alarmed: boolean;
  /** The run placed a hold on the chamber. */
  readonly held: boolean;
}

/** How one excursion was caught. */
export interface ExcursionOutcome {
  readonly excursion: Excursion;
  readonly detected: boolean;
  /** Runs from the excursion's first run to the first alarmed affected run (0: caught at once). */
  readonly delayRuns: number | null;
}

/** Detection of one (kind, size) cell. */
export interface DetectionCell {
  readonly kind: string;
  readonly size: number;
  readonly injected: number;
  readonly detected: number;
  readonly delayMean: number | null;
  readonly delayP90: number | null;
}

/** The figures of a detection report (bench:detection, the local fab's summary). */
export interface DetectionMetrics {
  /** Judged runs outside every excursion window (and its recovery runs). */
  readonly inControlRuns: number;
  readonly falseAlarmRuns: number;
  /** Pooled share of in-control runs with an alarm. */
  readonly falseAlarmRate: number;
  /** Per chamber share of in-control runs with an alarm: mean over chambers and the worst one. */
  readonly perChamber: {
    readonly chambers: number;
    readonly mean: number;
    readonly worst: number;
    readonly worstChamber: string | null;
  };
  /** Holds placed on chambers with no excursion at all, per 1,000 of their in-control runs. */
  readonly cleanChambers: number;
  readonly cleanInControlRuns: number;
  readonly cleanHolds: number;
  readonly holdsPer1k: number;
  readonly excursions: readonly ExcursionOutcome[];
  readonly cells: readonly DetectionCell[];
  /** Excursions of size >= `bigSize` sigma: injected, detected, share, delay over the detected ones. */
  readonly big: {
    readonly minSize: number;
    readonly injected: number;
    readonly detected: number;
    readonly rate: number;
    readonly delayMean: number | null;
    readonly delayP90: number | null;
  };
  /** Every excursion regardless of size. */
  readonly all: { readonly injected: number; readonly detected: number; readonly rate: number };
}

export interface DetectionMetricsOptions {
  /** Runs after an excursion's last run still left out of the in-control runs (chart memory). Default 5. */
  readonly recoveryRuns?: number;
  /** The size (sigma) from which the detection target applies. Default 2. */
  readonly bigSize?: number;
}

/** Nearest-rank percentile (`p` in 0..100) of a sample; null when empty. */
export function nearestRank(sample: readonly number[], p: number): number | null {
  if (sample.length === 0) return null;
  const sorted = [...sample].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? null;
}

function meanOf(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/**
 * Scores runs against the excursions injected into them. An excursion is detected when one of its
 * affected runs (first to last, inclusive) alarmed; its delay is the index of the first alarmed one
 * from its start. A run is in control when it was judged and lies outside every excursion of its
 * chamber (from the first affected run to `recoveryRuns` after the last); a false alarm is an
 * in-control run with an alarm. Holds count only on chambers that had no excursion.
 */
export function detectionMetrics(
  runs: Iterable<RunOutcome>,
  excursions: readonly Excursion[],
  options: DetectionMetricsOptions = {},
): DetectionMetrics {
  const recovery = options.recoveryRuns ?? 5;
  const bigSize = options.bigSize ?? 2;
  const byChamber = new Map<string, Excursion[]>();
  for (const x of excursions) byChamber.set(x.chamber, [...(byChamber.get(x.chamber) ?? []), x]);
  const firstAlarm = new Map<string, number>();
  const perChamber = new Map<string, { runs: number; alarms: number }>();
  let inControl = 0;
  let falseRuns = 0;
  let cleanRuns = 0;
  let cleanHolds = 0;
  const cleanChambers = new Set<string>();

  for (const r of runs) {
    const xs = byChamber.get(r.chamber);
    if (r.alarmed && xs) {
      for (const x of xs) {
        if (r.runIndex < x.startRun || r.runIndex > x.endRun) continue;
        const seen = firstAlarm.get(x.id);
        if (seen === undefined || r.runIndex < seen) firstAlarm.set(x.id, r.runIndex);
      }
    }
    if (!r.judged) continue;
    if (xs?.some((x) => r.runIndex >= x.startRun && r.runIndex <= x.endRun + recovery)) continue;
    inControl++;
    const c = perChamber.get(r.chamber) ?? { runs: 0, alarms: 0 };
    c.runs++;
    if (r.alarmed) {
      c.alarms++;
      falseRuns++;
    }
    perChamber.set(r.chamber, c);
    if (!xs) {
      cleanChambers.add(r.chamber);
      cleanRuns++;
      if (r.held) cleanHolds++;
    }
  }

  let worst = 0;
  let worstChamber: string | null = null;
  const rates: number[] = [];
  for (const [chamber, c] of [...perChamber].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (c.runs === 0) continue;
    const rate = c.alarms / c.runs;
    rates.push(rate);
    if (worstChamber === null || rate > worst) {
      worst = rate;
      worstChamber = chamber;
    }
  }

  const outcomes: ExcursionOutcome[] = excursions.map((x) => {
    const at = firstAlarm.get(x.id);
    return at === undefined
      ? { excursion: x, detected: false, delayRuns: null }
      : { excursion: x, detected: true, delayRuns: at - x.startRun };
  });
  const cells = new Map<string, ExcursionOutcome[]>();
  for (const o of outcomes) {
    const k = `${o.excursion.kind}\u0000${o.excursion.size}`;
    cells.set(k, [...(cells.get(k) ?? []), o]);
  }
  const cellRows: DetectionCell[] = [...cells.values()]
    .map((os) => {
      const delays = os.flatMap((o) => (o.delayRuns === null ? [] : [o.delayRuns]));
      const first = os[0] as ExcursionOutcome;
      return {
        kind: first.excursion.kind,
        size: first.excursion.size,
        injected: os.length,
        detected: delays.length,
        delayMean: meanOf(delays),
        delayP90: nearestRank(delays, 90),
      };
    })
    .sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.size - b.size));
  const big = outcomes.filter((o) => o.excursion.size >= bigSize);
  const bigDelays = big.flatMap((o) => (o.delayRuns === null ? [] : [o.delayRuns]));
  const detectedAll = outcomes.filter((o) => o.detected).length;

  return {
    inControlRuns: inControl,
    falseAlarmRuns: falseRuns,
    falseAlarmRate: inControl > 0 ? falseRuns / inControl : 0,
    perChamber: { chambers: rates.length, mean: meanOf(rates) ?? 0, worst, worstChamber },
    cleanChambers: cleanChambers.size,
    cleanInControlRuns: cleanRuns,
    cleanHolds,
    holdsPer1k: cleanRuns > 0 ? (1000 * cleanHolds) / cleanRuns : 0,
    excursions: outcomes,
    cells: cellRows,
    big: {
      minSize: bigSize,
      injected: big.length,
      detected: bigDelays.length,
      rate: big.length > 0 ? bigDelays.length / big.length : 0,
      delayMean: meanOf(bigDelays),
      delayP90: nearestRank(bigDelays, 90),
    },
    all: {
      injected: outcomes.length,
      detected: detectedAll,
      rate: outcomes.length > 0 ? detectedAll / outcomes.length : 0,
    },
  };
}

/**
 * The one-line summary of a preset's detection figures (the last line of `npm run bench:detection`
 * for the default preset).
 */
export function detectionLine(preset: string, m: DetectionMetrics): string {
  const pct = (x: number) => (100 * x).toFixed(1);
  return (
    `detection: preset ${preset} false-alarms ${pct(m.perChamber.mean)}% worst-chamber ${pct(m.perChamber.worst)}% ` +
    `holds-per-1k ${m.holdsPer1k.toFixed(1)} detected ${pct(m.big.rate)}% delay-p90 ${m.big.delayP90 ?? 'n/a'} runs`
  );
}
