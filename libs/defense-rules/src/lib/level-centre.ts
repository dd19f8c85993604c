/**
 * The monitor's adaptive centre as a small state carried from run to run.
 *
 * Tools age between maintenances and wander slowly: a sensor's level moves, and with it every
 * statistic of that sensor that measures a level (mean, median, percentiles, extremes and the extremes
 * of its moving average, first, last)
 * and, in proportion to a window's length, its integral. The centre the monitor judges a run
 * against follows that drift: per SVID, an EWMA (weight `lambda` per run) of the run's level offset
 * from the Phase I means, over the runs that raised no alarm (a fault that alarms never moves it; a
 * slow one is followed at `lambda` per run). Statistics that do not move with the level (std, slope,
 * duration, differences such as `max-mean`) keep their Phase I mean.
 *
 * The state is one number per SVID, so it travels in the model's own point of each run: judging a
 * run needs the previous run's point, not the chamber's history (which, for a chamber with a hundred
 * sensors, is thousands of values per run).
 */

/** Statistics that move one for one with a sensor's level. */
const LEVEL_STATISTICS: ReadonlySet<string> = new Set(['mean', 'median', 'p05', 'p95', 'min', 'max', 'first', 'last', 'ma_min', 'ma_max']);

/** `[<recipe>|]m/<svid>@<window>:<statistic>` */
const MONITOR_KEY = /^(?:[^|]*\|)?m\/(.*)@([^@:]*):([a-z0-9_]+(?:-[a-z0-9_]+)?)$/;

/** How one charted indicator follows its SVID's level offset. */
interface LevelTerm {
  readonly svid: string;
  /** Change of the indicator per unit of level offset: 1 for a level statistic, the window's length for an integral. */
  readonly gain: number;
  /** The indicator measures the level itself (its deviation enters the SVID's offset). */
  readonly level: boolean;
}

/** A model's charted indicators as the level centre sees them (see {@link levelTerms}). */
export interface LevelTerms {
  /** Per charted indicator (in the model's order): how it follows its SVID's level, or null. */
  readonly terms: readonly (LevelTerm | null)[];
  /** The SVIDs with at least one level indicator, sorted. */
  readonly svids: readonly string[];
}

/**
 * How each of `variables` (monitor keys) follows its SVID's level: level statistics with gain 1, an
 * integral with gain `mean integral / mean level` of its window (the window's mean length) when that
 * window's `mean` is charted and not zero; any other statistic not at all. Indicators listed in
 * `fixed` (a model's attribute indicators: few levels of a lattice sensor, whose level does not
 * shift additively with the other windows' — a state or a 0/1 reading saturates) keep their Phase I
 * centre and do not move their SVID's offset.
 */
export function levelTerms(variables: readonly string[], center: readonly number[], fixed: readonly string[] = []): LevelTerms {
  const skip = new Set(fixed);
  const parsed = variables.map((key) => (skip.has(key) ? null : MONITOR_KEY.exec(key)));
  const meanOf = new Map<string, number>();
  parsed.forEach((m, j) => {
    if (m && m[3] === 'mean') meanOf.set(`${m[1]}\u0000${m[2]}`, center[j] as number);
  });
  const svids = new Set<string>();
  const terms = parsed.map((m, j): LevelTerm | null => {
    if (!m) return null;
    const [, svid, window, statistic] = m as unknown as [string, string, string, string];
    if (LEVEL_STATISTICS.has(statistic)) {
      svids.add(svid);
      return { svid, gain: 1, level: true };
    }
    if (statistic === 'integral') {
      const level = meanOf.get(`${svid}\u0000${window}`);
      const gain = level !== undefined && level !== 0 ? (center[j] as number) / level : NaN;
      return Number.isFinite(gain) && gain > 0 ? { svid, gain, level: false } : null;
    }
    return null;
  });
  return { terms, svids: [...svids].sort() };
}

/** The centre of each charted indicator for SVID level offsets `offsets` (absent: 0). */
export function levelCentre(center: readonly number[], levels: LevelTerms, offsets: ReadonlyMap<string, number>): number[] {
  return center.map((c, j) => {
    const t = levels.terms[j];
    return t ? c + t.gain * (offsets.get(t.svid) ?? 0) : c;
  });
}

/**
 * The SVID level offsets after a run that raised no alarm: each SVID's offset moves by `lambda`
 * toward the run's own, the mean deviation of its level indicators from their Phase I means
 * (`values` in the model's order; NaN: missing). An SVID with no level value in the run keeps its offset.
 */
export function nextLevelOffsets(
  center: readonly number[],
  levels: LevelTerms,
  previous: ReadonlyMap<string, number>,
  values: readonly number[],
  lambda: number,
): Map<string, number> {
  const sum = new Map<string, number>();
  const count = new Map<string, number>();
  levels.terms.forEach((t, j) => {
    const v = values[j] as number;
    if (!t || !t.level || !Number.isFinite(v)) return;
    sum.set(t.svid, (sum.get(t.svid) ?? 0) + (v - (center[j] as number)));
    count.set(t.svid, (count.get(t.svid) ?? 0) + 1);
  });
  const next = new Map<string, number>();
  for (const svid of levels.svids) {
    const before = previous.get(svid) ?? 0;
    const n = count.get(svid) ?? 0;
    next.set(svid, n > 0 ? (1 - lambda) * before + lambda * ((sum.get(svid) as number) / n) : before);
  }
  return next;
}
