import { InvalidAssignmentInputError } from './errors';
import { buildProblem } from './problem';
import type { ChamberInput, DefenderInput } from './types';

/**
 * What a run costs a defender in CPU: a fixed part per run (reads, evaluation, commit, publish) and
 * a part per sample. ADR 0008 has the measurements behind the defaults.
 */
export interface CostModel {
  /** CPU ms of one run whatever its size. */
  readonly fixedMsPerRun: number;
  /** CPU ns per sample (SVID x sample) of a run. */
  readonly nsPerSample: number;
}

/**
 * The calibrated prior (ADR 0008): `npm run bench:pipeline`, SQLite, one defender, runs of 120 K
 * samples 48 ms and of 3.6 M samples 332 ms of CPU each; the line through both.
 */
export const DEFAULT_COST_MODEL: CostModel = { fixedMsPerRun: 38.2, nsPerSample: 81.6 };

/**
 * Runs per hour assumed for a chamber nobody has measured yet while no chamber has been measured
 * either: the fab simulator's 4.56 runs/s over 5,000 chambers (ADR 0008).
 */
export const DEFAULT_PRIOR_RUNS_PER_HOUR = 3.3;

/** Expected CPU ms per hour of a chamber: run rate x (fixed cost + cost per sample x samples). */
export function chamberLoadMsPerHour(runsPerHour: number, samplesPerRun: number, cost: CostModel): number {
  return runsPerHour * (cost.fixedMsPerRun + (cost.nsPerSample * samplesPerRun) / 1e6);
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

const finitePositive = (v: number) => Number.isFinite(v) && v > 0;

/**
 * The assignment weight of every chamber under the load model: expected CPU microseconds per
 * hour (an integer >= 1, so the engine's guarantees and its fast integer sort apply unchanged).
 * `samples` is each chamber's declared weight (samples per run). A chamber with a measured run
 * rate uses it; one without uses the median measured rate (the fab's typical chamber), or
 * `priorRunsPerHour` when nothing is measured.
 * @throws InvalidAssignmentInputError for a cost model or prior that is not finite and >= 0.
 */
export function chamberLoads(
  samples: readonly ChamberInput[],
  runsPerHour: ReadonlyMap<string, number>,
  cost: CostModel = DEFAULT_COST_MODEL,
  priorRunsPerHour = DEFAULT_PRIOR_RUNS_PER_HOUR,
): ChamberInput[] {
  const problems: string[] = [];
  if (!(Number.isFinite(cost.fixedMsPerRun) && cost.fixedMsPerRun >= 0)) problems.push(`fixedMsPerRun must be finite and >= 0, got ${cost.fixedMsPerRun}`);
  if (!(Number.isFinite(cost.nsPerSample) && cost.nsPerSample >= 0)) problems.push(`nsPerSample must be finite and >= 0, got ${cost.nsPerSample}`);
  if (!finitePositive(priorRunsPerHour)) problems.push(`priorRunsPerHour must be finite and > 0, got ${priorRunsPerHour}`);
  if (problems.length > 0) throw new InvalidAssignmentInputError(`invalid load model: ${problems.join('; ')}`, problems);
  const measured: number[] = [];
  for (const c of samples) {
    const r = runsPerHour.get(c.key);
    if (r !== undefined && finitePositive(r)) measured.push(r);
  }
  const prior = measured.length > 0 ? median(measured) : priorRunsPerHour;
  return samples.map((c) => {
    const r = runsPerHour.get(c.key);
    const rate = r !== undefined && finitePositive(r) ? r : prior;
    return { key: c.key, weight: Math.max(1, Math.round(chamberLoadMsPerHour(rate, c.weight, cost) * 1000)) };
  });
}

/**
 * A chamber's run rate measured where it is processed: an exponentially weighted mean of the
 * interval between runs (`alpha` per run). Until a run is overdue the rate is 1 / that mean; once
 * the time since the last run exceeds it, that time is used instead, so a chamber that stopped
 * running fades rather than keeping its old rate.
 */
export class RateMeter {
  private last: number | undefined;
  private meanIntervalMs: number | undefined;
  private runs = 0;

  constructor(private readonly alpha = 0.2) {
    if (!(alpha > 0 && alpha <= 1)) throw new InvalidAssignmentInputError(`alpha must be in (0, 1], got ${alpha}`, ['alpha']);
  }

  /** A run completed at `at` (ms on a monotonic clock). Out-of-order times are ignored. */
  run(at: number): void {
    if (this.last !== undefined) {
      if (at < this.last) return;
      const interval = Math.max(1, at - this.last);
      this.meanIntervalMs = this.meanIntervalMs === undefined ? interval : this.alpha * interval + (1 - this.alpha) * this.meanIntervalMs;
    }
    this.last = at;
    this.runs++;
  }

  /** Runs counted so far. */
  get count(): number {
    return this.runs;
  }

  /** Runs per hour at `now`, or undefined before two runs were seen. */
  runsPerHour(now: number): number | undefined {
    if (this.meanIntervalMs === undefined || this.last === undefined) return undefined;
    return 3_600_000 / Math.max(this.meanIntervalMs, now - this.last);
  }
}

/**
 * Fits a defender's own {@link CostModel} from what it measures per interval (e.g. per heartbeat):
 * process CPU ms, runs completed and samples in them. Least squares through the origin of
 * cpu = fixed x runs + perSample x samples on exponentially weighted sums (`decay` per interval);
 * when the runs do not tell fixed and per-sample cost apart (all of one size) or the fit is not
 * positive, the prior is scaled to the measured total instead. When intervals carry their length,
 * those without runs measure the process's idle CPU per second (heartbeats, timers, GC; an EWMA),
 * which is taken off the CPU of intervals with runs before the fit.
 */
export class CostCalibrator {
  private srr = 0;
  private srs = 0;
  private sss = 0;
  private src = 0;
  private ssc = 0;
  private cpu = 0;
  private wRuns = 0;
  private wSamples = 0;
  private runsSeen = 0;
  private idleMsPerSecond: number | undefined;

  constructor(
    private readonly prior: CostModel = DEFAULT_COST_MODEL,
    private readonly decay = 0.95,
  ) {
    if (!(decay > 0 && decay < 1)) throw new InvalidAssignmentInputError(`decay must be in (0, 1), got ${decay}`, ['decay']);
  }

  /**
   * One interval's measurement (`seconds`: its length, optional). An interval without runs only
   * updates the idle CPU; a negative or non-finite CPU delta is skipped.
   */
  add(cpuMs: number, runs: number, samples: number, seconds?: number): void {
    if (!(Number.isFinite(cpuMs) && cpuMs >= 0)) return;
    const timed = seconds !== undefined && Number.isFinite(seconds) && seconds > 0;
    if (runs === 0) {
      if (timed) this.idleMsPerSecond = this.idleMsPerSecond === undefined ? cpuMs / seconds : 0.8 * this.idleMsPerSecond + 0.2 * (cpuMs / seconds);
      return;
    }
    if (!(runs > 0 && Number.isFinite(samples) && samples >= 0)) return;
    if (timed && this.idleMsPerSecond !== undefined) cpuMs = Math.max(0, cpuMs - this.idleMsPerSecond * seconds);
    const s = samples / 1e6; // in millions, so the sums stay well conditioned
    const k = this.decay;
    this.srr = k * this.srr + runs * runs;
    this.srs = k * this.srs + runs * s;
    this.sss = k * this.sss + s * s;
    this.src = k * this.src + runs * cpuMs;
    this.ssc = k * this.ssc + s * cpuMs;
    this.cpu = k * this.cpu + cpuMs;
    this.wRuns = k * this.wRuns + runs;
    this.wSamples = k * this.wSamples + samples;
    this.runsSeen += runs;
  }

  /** Idle process CPU, ms per second, once an interval without runs was seen. */
  get idleCpuMsPerSecond(): number | undefined {
    return this.idleMsPerSecond;
  }

  /** Runs the fit has seen (0: the prior is returned). */
  get runs(): number {
    return this.runsSeen;
  }

  /** The fitted model (the prior before any run). */
  model(): CostModel {
    if (this.runsSeen === 0) return this.prior;
    const det = this.srr * this.sss - this.srs * this.srs;
    if (det > 1e-6 * this.srr * this.sss) {
      const fixed = (this.src * this.sss - this.ssc * this.srs) / det;
      const perMillion = (this.ssc * this.srr - this.src * this.srs) / det;
      if (fixed > 0 && perMillion > 0) return { fixedMsPerRun: fixed, nsPerSample: perMillion };
    }
    // Scale the prior to the measured total (weighted like the sums).
    const p = this.prior;
    const expected = p.fixedMsPerRun * this.wRuns + (p.nsPerSample * this.wSamples) / 1e6;
    const k = expected > 0 ? this.cpu / expected : 1;
    return { fixedMsPerRun: p.fixedMsPerRun * k, nsPerSample: p.nsPerSample * k };
  }
}

/** Per-defender load under given chamber weights, against the targets the engine balances to. */
export interface BalanceReport {
  /** Defender id -> summed weight of its chambers (chambers owned by defenders not listed are skipped). */
  readonly load: Record<string, number>;
  /** Defender id -> the load the engine aims at (its share, or a dedicated chamber's weight). */
  readonly target: Record<string, number>;
  /** Largest and smallest load / target over the defenders (1 when there is no weight). */
  readonly maxRatio: number;
  readonly minRatio: number;
}

/**
 * How far an existing assignment is from balance under `chambers`' current weights (e.g. loads
 * from {@link chamberLoads}): per defender load and its target as {@link computeAssignment} would
 * set it. Chambers missing from `assignments` or owned by another id count for nobody.
 */
export function balanceOf(
  assignments: Readonly<Record<string, string>>,
  chambers: readonly ChamberInput[],
  defenders: readonly DefenderInput[],
): BalanceReport {
  const p = buildProblem({ assignments }, chambers, defenders, {});
  const load = new Float64Array(p.m);
  for (let i = 0; i < p.n; i++) if (p.prevOwner[i] >= 0) load[p.prevOwner[i]] += p.weight[i];
  const out: BalanceReport = { load: {}, target: {}, maxRatio: 1, minRatio: 1 };
  let max = 0;
  let min = Number.POSITIVE_INFINITY;
  for (let d = 0; d < p.m; d++) {
    out.load[p.ids[d]] = load[d];
    out.target[p.ids[d]] = p.target[d];
    if (p.target[d] > 0) {
      max = Math.max(max, load[d] / p.target[d]);
      min = Math.min(min, load[d] / p.target[d]);
    }
  }
  return p.totalWeight > 0 && p.m > 0 ? { ...out, maxRatio: max, minRatio: min } : out;
}
