/** The chamber monitor as a detector: its stage on the run, its points with their own flags. */
import type { MonitorModelInput, MonitorState, UChartPoint } from '@defender/contracts';
import type { MonitorConfig, MonitorViolation } from '@defender/defense-rules';
import { needsOlderRuns, type Detector, type DetectorInput, type DetectorVerdict, type OlderRunsNeeded } from './detector';
import { POINT_FLAGS, ruleFlag } from './flags';
import { MonitorModelCache } from './monitor-model-store';
import { monitorPoint, runMonitorStage } from './monitor-stage';

/** The monitor's verdict: its violations, what the alarm says of the model, and the recipe's state after the run. */
export interface MonitorVerdict extends DetectorVerdict {
  readonly violations: readonly MonitorViolation[];
  readonly modelKey: string;
  readonly modelVersion: number | null;
  readonly t2: number | null;
  readonly spe: number | null;
  readonly action: MonitorConfig['action'];
  /** Undefined when the run leaves the stored state as it is. */
  readonly state: MonitorState | undefined;
  /** The model record to store with the run (fitted by it, or converted from an earlier release's limit sets). */
  readonly modelRecord: MonitorModelInput | undefined;
}

/**
 * The monitor of a strategy that has one (`strategy.monitor`). It keeps the models it decoded (a
 * memo: a run is judged the same with an empty one); one per evaluator.
 */
export class MonitorDetector implements Detector<MonitorVerdict> {
  private readonly models = new MonitorModelCache();

  step(input: DetectorInput): MonitorVerdict | OlderRunsNeeded {
    const cfg = input.strategy.monitor;
    if (!cfg) throw new RangeError('the strategy has no monitor');
    const stage = runMonitorStage({ ...input, strategy: { ...input.strategy, monitor: cfg }, models: this.models });
    if (needsOlderRuns(stage)) return stage;
    const bits = new Map<string, number>();
    for (const v of stage.violations) bits.set(v.key, (bits.get(v.key) ?? 0) | POINT_FLAGS.VIOLATION | ruleFlag(v.rule));
    const points: UChartPoint[] = stage.points.map((p) => {
      let flags = bits.get(p.key) ?? 0;
      if (stage.fitted && p.limitsVersion !== undefined) flags |= POINT_FLAGS.NEW_LIMITS;
      if (p.baselineData) flags |= POINT_FLAGS.BASELINE_DATA;
      if (p.key === stage.modelKey && stage.state) flags |= POINT_FLAGS.MEMORY_IN_STATE;
      return monitorPoint(p, flags);
    });
    return {
      points,
      newLimitSets: [],
      skipped: stage.skipped,
      alarmed: stage.violations.length > 0,
      violations: stage.violations,
      modelKey: stage.modelKey,
      modelVersion: stage.model?.version ?? null,
      t2: stage.t2,
      spe: stage.spe,
      action: cfg.action,
      state: stage.state,
      modelRecord: stage.modelRecord,
    };
  }
}
