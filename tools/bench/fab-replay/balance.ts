// Pure judgements of the whole-fab replay about how the cluster shares and survives its load (issue 23):
// whether the defenders' CPU stays within a band around their mean in a step, and whether a step
// offered beyond the sustained speed degraded gracefully. No I/O; tested in balance.spec.ts.

/** One process's CPU over a window, as the bench measures it (100 = one core). */
export interface ProcCpu {
  readonly name: string;
  readonly cpuPct: number;
}

export interface CpuBalance {
  /** Mean CPU % of the defenders. */
  readonly meanPct: number;
  /** Largest |defender CPU / mean - 1| (0 when every defender used the same). */
  readonly maxDeviation: number;
  /** The defender furthest from the mean. */
  readonly furthest: string | undefined;
  /** Within the band (false when there is no defender or they used no CPU at all). */
  readonly within: boolean;
}

/** How far the defenders' CPU spreads around its mean (processes named `defender ...`). */
export function cpuBalance(procs: readonly ProcCpu[], band: number): CpuBalance {
  const defenders = procs.filter((p) => p.name.startsWith('defender') && Number.isFinite(p.cpuPct));
  const meanPct = defenders.reduce((a, p) => a + p.cpuPct, 0) / (defenders.length || 1);
  if (defenders.length === 0 || !(meanPct > 0)) return { meanPct: defenders.length ? meanPct : NaN, maxDeviation: NaN, furthest: undefined, within: false };
  let maxDeviation = 0;
  let furthest: string | undefined;
  for (const p of defenders) {
    const dev = Math.abs(p.cpuPct / meanPct - 1);
    if (dev >= maxDeviation) {
      maxDeviation = dev;
      furthest = p.name;
    }
  }
  return { meanPct, maxDeviation, furthest, within: maxDeviation <= band };
}

/** What an overload step (offered beyond the highest sustained speed) measured. */
export interface OverloadObservation {
  /** Runs/s the cluster committed in the window of the overload step. */
  readonly processedRate: number;
  /** Runs/s it committed in the highest sustained step (its capacity as measured). */
  readonly sustainedProcessedRate: number;
  /** Assignment maps published during the window (a busy defender judged dead publishes one). */
  readonly mapChanges: number;
  /** Highest defender RSS in the window, MB. */
  readonly peakRssMb: number;
  readonly rssTargetMb: number;
  /** Runs dead-lettered or lost in the window. */
  readonly deadLettered: number;
  readonly lost: number;
}

export interface OverloadVerdict {
  readonly graceful: boolean;
  readonly reasons: readonly string[];
}

/**
 * Overload degrades gracefully (issue 23): throughput plateaus at capacity (processed runs/s at least
 * `plateauShare` of the sustained step's), no defender is judged dead (no map published), memory stays
 * within its target, and nothing is lost or dead-lettered.
 */
export function judgeOverload(o: OverloadObservation, plateauShare = 1): OverloadVerdict {
  const reasons: string[] = [];
  if (o.processedRate < plateauShare * o.sustainedProcessedRate)
    reasons.push(`processed ${o.processedRate.toFixed(1)} runs/s < ${plateauShare === 1 ? '' : `${plateauShare} x `}the sustained ${o.sustainedProcessedRate.toFixed(1)}`);
  if (o.mapChanges > 0) reasons.push(`${o.mapChanges} maps published`);
  if (o.peakRssMb > o.rssTargetMb) reasons.push(`defender RSS ${o.peakRssMb.toFixed(0)} MB > ${o.rssTargetMb} MB`);
  if (o.deadLettered > 0) reasons.push(`${o.deadLettered} runs dead-lettered`);
  if (o.lost > 0) reasons.push(`${o.lost} runs lost`);
  return { graceful: reasons.length === 0, reasons };
}
