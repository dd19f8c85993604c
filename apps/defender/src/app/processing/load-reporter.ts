import { CostCalibrator, RateMeter } from '@defender/assignment';
import { type LoadReport, MAX_RATES_PER_HEARTBEAT } from '@defender/contracts';

/** Process CPU used so far, ms (user + system). */
export type CpuClock = () => number;

/**
 * What this defender measures for the controller's load model (ADR 0008): per owned chamber the
 * run rate (EWMA of the interval between applied runs), and over each heartbeat interval its
 * process CPU against the runs and samples it evaluated, fitted into a cost per run and per sample.
 * {@link report} returns the heartbeat's bounded `loadReport`: the fit, the CPU, and the rates of
 * the next {@link MAX_RATES_PER_HEARTBEAT} chambers in turn.
 */
export class LoadReporter {
  private readonly meters = new Map<string, RateMeter>();
  private readonly calibrator = new CostCalibrator();
  private runs = 0;
  private samples = 0;
  private last: { at: number; cpu: number };
  private cursor = 0;

  constructor(
    private readonly monotonic: () => number,
    private readonly cpu: CpuClock,
  ) {
    this.last = { at: monotonic(), cpu: cpu() };
  }

  /** A run's trace was evaluated (its CPU is spent, whatever the outcome). */
  evaluated(samples: number): void {
    if (!(Number.isFinite(samples) && samples >= 0)) return;
    this.runs++;
    this.samples += samples;
  }

  /** A run of `chamber` was applied: counts towards its run rate. */
  applied(chamber: string): void {
    let m = this.meters.get(chamber);
    if (!m) this.meters.set(chamber, (m = new RateMeter()));
    m.run(this.monotonic());
  }

  /** Chambers no longer owned: their rates are the next owner's to measure (the controller keeps the last one). */
  release(chambers: readonly string[]): void {
    for (const c of chambers) this.meters.delete(c);
  }

  /** Closes the interval since the last report and returns the heartbeat's load report. */
  report(): LoadReport {
    const at = this.monotonic();
    const cpu = this.cpu();
    const cpuMs = cpu - this.last.cpu;
    const seconds = (at - this.last.at) / 1000;
    this.calibrator.add(cpuMs, this.runs, this.samples, seconds);
    this.runs = 0;
    this.samples = 0;
    this.last = { at, cpu };
    const model = this.calibrator.model();
    return {
      fixedMsPerRun: model.fixedMsPerRun,
      nsPerSample: model.nsPerSample,
      calibrationRuns: this.calibrator.runs,
      cpuMsPerSecond: seconds > 0 && cpuMs >= 0 ? cpuMs / seconds : 0,
      rates: this.page(at),
    };
  }

  /** The next page of measured rates, cycling through the owned chambers (insertion order). */
  private page(now: number): [string, number][] {
    const keys = [...this.meters.keys()];
    const out: [string, number][] = [];
    if (keys.length === 0) return out;
    const start = this.cursor % keys.length;
    let scanned = 0;
    while (scanned < keys.length && out.length < MAX_RATES_PER_HEARTBEAT) {
      const key = keys[(start + scanned) % keys.length] as string;
      scanned++;
      const r = this.meters.get(key)?.runsPerHour(now);
      if (r !== undefined && Number.isFinite(r) && r > 0) out.push([key, r]);
    }
    this.cursor = (start + scanned) % keys.length;
    return out;
  }
}

/** The process's CPU time so far, ms. */
export const processCpuMs: CpuClock = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
