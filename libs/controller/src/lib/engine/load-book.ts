import { ChamberInput, chamberLoads, CostModel, DEFAULT_COST_MODEL, DEFAULT_PRIOR_RUNS_PER_HOUR } from '@defender/assignment';
import type { Heartbeat } from '@defender/contracts';

/** A defender's fit counts towards the fleet's cost model once it has seen this many runs. */
export const MIN_CALIBRATION_RUNS = 20;

/**
 * What the leader knows of the measured load (ADR 0008): the last run rate any defender reported
 * for each chamber (heartbeats carry them a page at a time; a chamber keeps its rate when it
 * moves, until its new owner has measured it), each defender's cost fit and process CPU.
 */
export class LoadBook {
  private readonly rates = new Map<string, number>();
  private readonly fits = new Map<string, { model: CostModel; runs: number; cpuMsPerSecond: number }>();

  constructor(
    private readonly prior: CostModel = DEFAULT_COST_MODEL,
    private readonly priorRunsPerHour = DEFAULT_PRIOR_RUNS_PER_HOUR,
  ) {}

  /** Every heartbeat in the bucket (a defender without an entry drops out of the fits). */
  observe(heartbeats: readonly Heartbeat[]): void {
    this.fits.clear();
    for (const hb of heartbeats) {
      const r = hb.loadReport;
      if (!r) continue;
      for (const [key, perHour] of r.rates) this.rates.set(key, perHour);
      this.fits.set(hb.defenderId, {
        model: { fixedMsPerRun: r.fixedMsPerRun, nsPerSample: r.nsPerSample },
        runs: r.calibrationRuns,
        cpuMsPerSecond: r.cpuMsPerSecond,
      });
    }
  }

  /** The fleet's cost model: the run-weighted mean of calibrated defenders' fits, else the prior. */
  cost(): CostModel {
    let runs = 0;
    let fixed = 0;
    let ns = 0;
    for (const f of this.fits.values()) {
      if (f.runs < MIN_CALIBRATION_RUNS) continue;
      runs += f.runs;
      fixed += f.runs * f.model.fixedMsPerRun;
      ns += f.runs * f.model.nsPerSample;
    }
    return runs > 0 ? { fixedMsPerRun: fixed / runs, nsPerSample: ns / runs } : this.prior;
  }

  /**
   * Chamber weights for the engine: expected CPU µs per hour from declared samples per run,
   * measured run rates and the cost model. Forgets rates of chambers no longer listed.
   */
  loads(samples: readonly ChamberInput[]): ChamberInput[] {
    if (this.rates.size > samples.length) {
      const keys = new Set(samples.map((c) => c.key));
      for (const k of [...this.rates.keys()]) if (!keys.has(k)) this.rates.delete(k);
    }
    return chamberLoads(samples, this.rates, this.cost(), this.priorRunsPerHour);
  }

  /** Chambers with a measured rate. */
  get measuredChambers(): number {
    return this.rates.size;
  }

  /** Process CPU per defender from its last report, ms per second (1000 = one core). */
  cpuByDefender(): Record<string, number> {
    return Object.fromEntries([...this.fits].map(([id, f]) => [id, f.cpuMsPerSecond]));
  }
}
