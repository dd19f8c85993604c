import { EXCURSION_KINDS, type Excursion, type ExcursionKind } from './excursions';

/** An alarm as the store or the `defense.alarms.>` stream reports it (the fields scoring needs). */
export interface ObservedAlarm {
  readonly toolId: string;
  readonly chamberId: string;
  readonly runId: string;
  readonly ruleId: string;
  readonly indicatorKey: string;
  readonly svid?: string;
  readonly statistic?: string;
  readonly value?: number | null;
  /** A run-level alarm's details: `violations`, each with its SVID and contributions (see {@link alarmSvids}). */
  readonly details?: unknown;
}

/**
 * The SVIDs an alarm names: its own, and for a run-level alarm every SVID of its violations and of
 * their listed contributors (the indicators that drove a T² or SPE signal).
 */
export function alarmSvids(a: ObservedAlarm): ReadonlySet<string> {
  const out = new Set<string>();
  if (a.svid) out.add(a.svid);
  const details = a.details as { violations?: unknown } | null | undefined;
  const violations = details && Array.isArray(details.violations) ? (details.violations as unknown[]) : [];
  for (const v of violations) {
    const o = v as { svid?: unknown; contributions?: unknown } | null;
    if (typeof o?.svid === 'string') out.add(o.svid);
    if (Array.isArray(o?.contributions)) for (const c of o.contributions as { svid?: unknown }[]) if (typeof c?.svid === 'string') out.add(c.svid);
  }
  return out;
}

export interface ExcursionResult {
  readonly excursion: Excursion;
  readonly detected: boolean;
  /** Runs from the excursion's first run to the first alarm on its SVID (0: caught on its first run). */
  readonly delayRuns: number | null;
  readonly firstAlarm?: { readonly runIndex: number; readonly ruleId: string; readonly statistic?: string };
}

export interface DetectionScore {
  readonly excursions: readonly ExcursionResult[];
  readonly injected: number;
  readonly detected: number;
  readonly byKind: Readonly<Record<ExcursionKind, { injected: number; detected: number; meanDelay: number | null; maxDelay: number | null }>>;
  /** Alarms not explained by an excursion (wrong run or wrong SVID). */
  readonly falseAlarms: number;
  /** Distinct runs with at least one unexplained alarm. */
  readonly falseAlarmRuns: number;
  /** Runs after Phase I outside every excursion window (the denominator of the false-alarm rate). */
  readonly inControlRuns: number;
  readonly falseAlarmRunRate: number;
  /** Alarms seen for this simulation's runs. */
  readonly alarms: number;
}

export interface ScoreInput {
  readonly excursions: readonly Excursion[];
  readonly alarms: readonly ObservedAlarm[];
  /** Chamber key and run index of one of this simulation's run ids (undefined: not ours). */
  readonly runOf: (toolId: string, chamberId: string, runId: string) => number | undefined;
  /** Runs published per chamber key. */
  readonly publishedRuns: ReadonlyMap<string, number>;
  /** Phase I length (runs without limits, never alarmed). */
  readonly phaseOneRuns: number;
  /** An alarm up to this many runs after an excursion's last run still counts as its detection. */
  readonly graceRuns: number;
}

/**
 * Scores alarms against the injected excursions: an excursion is detected by the first alarm that
 * names its SVID ({@link alarmSvids}; for a correlated pair, either of its two SVIDs) from its first run to `graceRuns`
 * after its last; every other alarm is a false alarm.
 */
export function scoreDetection(input: ScoreInput): DetectionScore {
  const windows = new Map<string, Excursion[]>();
  for (const x of input.excursions) windows.set(x.chamber, [...(windows.get(x.chamber) ?? []), x]);
  const first = new Map<string, { runIndex: number; ruleId: string; statistic?: string }>();
  const falseRuns = new Set<string>();
  let falseAlarms = 0;
  let alarms = 0;
  for (const a of input.alarms) {
    const chamber = `${a.toolId}:${a.chamberId}`;
    const idx = input.runOf(a.toolId, a.chamberId, a.runId);
    if (idx === undefined) continue;
    alarms++;
    const named = alarmSvids(a);
    const hit = (windows.get(chamber) ?? []).find(
      (x) => (named.has(x.svid) || (x.svid2 !== undefined && named.has(x.svid2))) && idx >= x.startRun && idx <= x.endRun + input.graceRuns,
    );
    if (!hit) {
      falseAlarms++;
      falseRuns.add(`${chamber}#${idx}`);
      continue;
    }
    const seen = first.get(hit.id);
    if (!seen || idx < seen.runIndex) first.set(hit.id, { runIndex: idx, ruleId: a.ruleId, ...(a.statistic ? { statistic: a.statistic } : {}) });
  }
  const results: ExcursionResult[] = input.excursions.map((x) => {
    const f = first.get(x.id);
    return f
      ? { excursion: x, detected: true, delayRuns: Math.max(0, f.runIndex - x.startRun), firstAlarm: f }
      : { excursion: x, detected: false, delayRuns: null };
  });
  const byKind = Object.fromEntries(
    EXCURSION_KINDS.map((k) => {
      const rs = results.filter((r) => r.excursion.kind === k);
      const delays = rs.flatMap((r) => (r.delayRuns === null ? [] : [r.delayRuns]));
      return [
        k,
        {
          injected: rs.length,
          detected: delays.length,
          meanDelay: delays.length ? delays.reduce((a, b) => a + b, 0) / delays.length : null,
          maxDelay: delays.length ? Math.max(...delays) : null,
        },
      ];
    }),
  ) as DetectionScore['byKind'];
  let inControl = 0;
  for (const [chamber, n] of input.publishedRuns) {
    const xs = windows.get(chamber) ?? [];
    for (let i = input.phaseOneRuns; i < n; i++) {
      if (!xs.some((x) => i >= x.startRun && i <= x.endRun + input.graceRuns)) inControl++;
    }
  }
  return {
    excursions: results,
    injected: results.length,
    detected: results.filter((r) => r.detected).length,
    byKind,
    falseAlarms,
    falseAlarmRuns: falseRuns.size,
    inControlRuns: inControl,
    falseAlarmRunRate: inControl > 0 ? falseRuns.size / inControl : 0,
    alarms,
  };
}
