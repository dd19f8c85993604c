/**
 * How long the local fab's simulation runs (issue 52, item 5: the first summary came after ~27
 * minutes). By default a short run, so a new user sees the simulator's summary a few minutes after
 * the cluster is up; `--full` is the simulator's own run ({@link FULL_RUN}).
 *
 * On the default small fab (42 chambers, seed 1) the paced part after the Phase I warm-up (30 runs
 * per chamber, published as fast as the cluster takes them) spans, in wall time: 20 runs per chamber
 * at speed 600, 2.2 minutes; 50 runs per chamber at speed 100, 23 minutes (`schedule` of
 * @defender/fab-sim over the chambers' run durations).
 */
export const SHORT_RUN = {
  /** Runs per chamber: Phase I's 30, then 20 judged runs, excursions from run 35 (every kind fits). */
  runs: 50,
  /** Simulated seconds per wall second after the warm-up (the chambers' runs last 10-30 minutes). */
  speed: 600,
} as const;

/** The simulator's own defaults (`fab-sim run` without `--runs` / `--speed`): the local fab's `--full`. */
export const FULL_RUN = { runs: 80, speed: 100 } as const;

/** The local fab's run-length options, as given. */
export interface RunLengthOptions {
  readonly runs?: string;
  readonly speed?: string;
  readonly full?: boolean;
}

/**
 * `fab-sim run`'s `--runs` / `--speed`: each as given; else the short run's, or with `--full`
 * nothing (the simulator's defaults).
 */
export function runLengthArgs(o: RunLengthOptions): string[] {
  const runs = o.runs ?? (o.full ? undefined : String(SHORT_RUN.runs));
  const speed = o.speed ?? (o.full ? undefined : String(SHORT_RUN.speed));
  return [...(speed !== undefined ? ['--speed', speed] : []), ...(runs !== undefined ? ['--runs', runs] : [])];
}

/** The start banner's line on the simulation (after "Simulator"). */
export function describeRunLength(o: RunLengthOptions): string {
  const args = runLengthArgs(o);
  if (o.runs !== undefined || o.speed !== undefined) return `fab-sim run ${args.join(' ')}${o.full ? " (otherwise the simulator's defaults: --full)" : ''}`;
  if (o.full) return `the full run: ${FULL_RUN.runs} runs per chamber at speed ${FULL_RUN.speed}, its summary after ~27 minutes`;
  return `the short run: ${SHORT_RUN.runs} runs per chamber at speed ${SHORT_RUN.speed}, its summary a few minutes from now (--full: ${FULL_RUN.runs} runs at speed ${FULL_RUN.speed}, ~27 minutes)`;
}
