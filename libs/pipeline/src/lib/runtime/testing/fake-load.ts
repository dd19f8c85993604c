import type { LoadReport } from '@defender/contracts';
import type { ProcessingLoad } from '../ports';

/** The load model's measurements as a record: what was evaluated, applied and released; `report` lists the chambers applied since the last. */
export class FakeLoad implements ProcessingLoad {
  readonly samples: number[] = [];
  readonly appliedRuns: string[] = [];
  readonly released: string[] = [];
  private sinceReport = new Set<string>();

  evaluated(samples: number): void {
    this.samples.push(samples);
  }
  applied(chamber: string): void {
    this.appliedRuns.push(chamber);
    this.sinceReport.add(chamber);
  }
  release(chambers: readonly string[]): void {
    this.released.push(...chambers);
    for (const c of chambers) this.sinceReport.delete(c);
  }
  report(): LoadReport {
    const rates = [...this.sinceReport].map((c): [string, number] => [c, 1]);
    this.sinceReport = new Set();
    return { fixedMsPerRun: 0, nsPerSample: 0, calibrationRuns: 0, cpuMsPerSecond: 0, rates };
  }
}
