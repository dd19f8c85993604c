// Pure logic of the whole-fab replay benchmark: whether one measurement step was sustained, and which
// speed factor to try next. No I/O; tested in sustain.spec.ts.

/** Least-squares slope of y over x (units of y per unit of x); 0 for fewer than 2 distinct x. */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  let sx = 0;
  let sy = 0;
  for (const p of points) {
    sx += p.x;
    sy += p.y;
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den > 0 ? num / den : 0;
}

/** Median of a sample (NaN when empty). */
export function median(sample: readonly number[]): number {
  if (sample.length === 0) return NaN;
  const s = [...sample].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
}

/** What one step measured (the inputs of the judgement). */
export interface StepObservation {
  /** Length of the measurement window (publishing at the speed factor), seconds. */
  readonly windowSeconds: number;
  /** Runs the schedule asked for in the window (speed factor x the fab's real-time rate x window). */
  readonly scheduledRuns: number;
  /** Runs actually published in the window. */
  readonly publishedRuns: number;
  /** Backlog (published, not yet committed) sampled during the window: seconds since its start, runs. */
  readonly backlog: readonly { t: number; runs: number }[];
  /** Per committed run of the window: seconds since the window start when it was published, and its lag (ms). */
  readonly lags: readonly { t: number; lagMs: number }[];
  /** Seconds after the window until every run published in it was committed (Infinity: not within the timeout). */
  readonly drainSeconds: number;
  /** Runs of the window that went to a dead-letter subject (or were committed without points). */
  readonly deadLettered: number;
  /** Runs of the window never committed (after the drain timeout). */
  readonly lost: number;
}

export interface Thresholds {
  /** The publisher must get at least this share of the scheduled runs out (else the offered load is not the speed factor's). */
  readonly minOfferedShare: number;
  /** The backlog trend may be up by at most this share of the offered rate (runs/s per offered run/s) ... */
  readonly maxBacklogGrowthShare: number;
  /**
   * ... unless the trend over the whole window adds up to no more than this many runs, or to no more
   * than `backlogGrowthSeconds` of offered runs (a backlog of a few runs is noise, not a trend).
   */
  readonly minBacklogGrowthRuns: number;
  readonly backlogGrowthSeconds: number;
  /** Median lag of the window's last third may exceed that of its first third by at most this factor ... */
  readonly maxLagGrowthFactor: number;
  /** ... plus this many ms. */
  readonly lagGrowthSlackMs: number;
  /** After the window, the backlog must drain within max(this many seconds, drainShare x window). */
  readonly maxDrainSeconds: number;
  readonly maxDrainShare: number;
}

export const DEFAULT_THRESHOLDS: Thresholds = {
  minOfferedShare: 0.9,
  maxBacklogGrowthShare: 0.02,
  minBacklogGrowthRuns: 10,
  backlogGrowthSeconds: 1,
  maxLagGrowthFactor: 2,
  lagGrowthSlackMs: 1000,
  maxDrainSeconds: 10,
  maxDrainShare: 0.2,
};

export interface StepVerdict {
  readonly sustained: boolean;
  /** Why not (empty when sustained). */
  readonly reasons: string[];
  /** Backlog growth over the window, runs/s (least squares). */
  readonly backlogSlope: number;
  /** Median lag of the first and the last third of the window, ms. */
  readonly lagEarlyMs: number;
  readonly lagLateMs: number;
  /** Published runs per second over the window. */
  readonly offeredRate: number;
}

/**
 * A step is sustained when the publisher offered (nearly) the scheduled load, nothing was lost or
 * dead-lettered, the backlog did not trend upwards, the lag did not grow from the first to the last
 * third of the window, and what was left at the end drained promptly.
 */
export function judgeStep(o: StepObservation, th: Thresholds = DEFAULT_THRESHOLDS): StepVerdict {
  const reasons: string[] = [];
  const offeredRate = o.windowSeconds > 0 ? o.publishedRuns / o.windowSeconds : 0;
  if (o.scheduledRuns > 0 && o.publishedRuns < th.minOfferedShare * o.scheduledRuns)
    reasons.push(
      `the publisher got only ${o.publishedRuns} of ${o.scheduledRuns} scheduled runs out (${((100 * o.publishedRuns) / o.scheduledRuns).toFixed(0)} %)`,
    );
  if (o.lost > 0) reasons.push(`${o.lost} runs not committed`);
  if (o.deadLettered > 0) reasons.push(`${o.deadLettered} runs dead-lettered`);
  const backlogSlope = slope(o.backlog.map((b) => ({ x: b.t, y: b.runs })));
  const maxGrowth = Math.max(
    th.maxBacklogGrowthShare * offeredRate,
    Math.max(th.minBacklogGrowthRuns, th.backlogGrowthSeconds * offeredRate) / Math.max(1e-9, o.windowSeconds),
  );
  if (backlogSlope > maxGrowth)
    reasons.push(`backlog grew ${backlogSlope.toFixed(2)} runs/s (limit ${maxGrowth.toFixed(2)})`);
  const third = o.windowSeconds / 3;
  const lagEarlyMs = median(o.lags.filter((l) => l.t < third).map((l) => l.lagMs));
  const lagLateMs = median(o.lags.filter((l) => l.t >= 2 * third).map((l) => l.lagMs));
  if (Number.isFinite(lagEarlyMs) && Number.isFinite(lagLateMs)) {
    const limit = lagEarlyMs * th.maxLagGrowthFactor + th.lagGrowthSlackMs;
    if (lagLateMs > limit)
      reasons.push(`lag grew: median ${lagEarlyMs.toFixed(0)} ms -> ${lagLateMs.toFixed(0)} ms (limit ${limit.toFixed(0)})`);
  } else if (o.publishedRuns > 0 && o.lags.length === 0) reasons.push('no run of the window was committed');
  const drainLimit = Math.max(th.maxDrainSeconds, th.maxDrainShare * o.windowSeconds);
  if (!(o.drainSeconds <= drainLimit))
    reasons.push(
      Number.isFinite(o.drainSeconds)
        ? `the backlog took ${o.drainSeconds.toFixed(1)} s to drain (limit ${drainLimit.toFixed(0)} s)`
        : 'the backlog did not drain',
    );
  return { sustained: reasons.length === 0, reasons, backlogSlope, lagEarlyMs, lagLateMs, offeredRate };
}

export interface SearchOptions {
  readonly start: number;
  readonly max: number;
  /** Multiplier while every step so far was sustained (> 1). */
  readonly growth: number;
  /** Bisection steps between the highest sustained and the lowest failed speed. */
  readonly refine: number;
  /** Lowest speed worth trying when even the start fails. */
  readonly min: number;
}

/**
 * The next speed factor to try after `tried` (in order, with their verdicts), or undefined when the
 * search is over: grow geometrically from `start` until a step fails or `max` passed, then bisect
 * (geometric midpoint) between the highest sustained and the lowest failed speed `refine` times;
 * when the very first steps fail, halve down to `min`.
 */
export function nextSpeed(tried: readonly { speed: number; sustained: boolean }[], o: SearchOptions): number | undefined {
  if (tried.length === 0) return Math.min(o.start, o.max);
  const passed = tried.filter((t) => t.sustained).map((t) => t.speed);
  const failed = tried.filter((t) => !t.sustained).map((t) => t.speed);
  const best = passed.length ? Math.max(...passed) : undefined;
  const worst = failed.length ? Math.min(...failed.filter((f) => best === undefined || f > best)) : undefined;
  if (worst === undefined || !Number.isFinite(worst)) {
    // Nothing failed above the best so far: keep growing.
    if (best === undefined) return undefined;
    if (best >= o.max) return undefined;
    return round2(Math.min(o.max, best * o.growth));
  }
  if (best === undefined) {
    const down = round2(worst / 2);
    return down >= o.min ? down : undefined;
  }
  // Bisection steps done so far: tries after the first one at which the bracket [pass, fail] existed.
  let bracketAt = -1;
  for (let i = 0, b = -Infinity; i < tried.length; i++) {
    const t = tried[i];
    if (!t) continue;
    if (t.sustained) b = Math.max(b, t.speed);
    if (tried.slice(0, i + 1).some((x) => !x.sustained && x.speed > b) && b > -Infinity) {
      bracketAt = i;
      break;
    }
  }
  const bisections = tried.length - 1 - bracketAt;
  if (bisections >= o.refine) return undefined;
  const mid = round2(Math.sqrt(best * worst));
  if (mid <= best * 1.05 || mid >= worst * 0.95) return undefined; // close enough
  return mid;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
