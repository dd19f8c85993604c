import { RECORD_LIMITS, type AlarmInput, type ChamberRef, type HoldInput, type JsonObject } from '@defender/contracts';
import type { Action, MonitorViolation, Violation } from '@defender/defense-rules';
import { xxh64Hex } from '@defender/hashing';
import type { WindowSpec } from '@defender/uchart';

/** Who and what a run is: copied into every alarm and hold. */
export interface RunIdentity {
  readonly chamber: ChamberRef;
  readonly sequence: number;
  readonly runId: string;
  readonly recipe: string;
}

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : String(Number(x.toPrecision(6)));
}

function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

function windowText(w: WindowSpec): string {
  if (w.kind === 'context') return 'whole context';
  if (w.kind === 'segment') return `time segment ${w.index + 1} of ${w.of}`;
  const trims = [
    w.trimStartSeconds ? `first ${w.trimStartSeconds} s` : '',
    w.trimEndSeconds ? `last ${w.trimEndSeconds} s` : '',
  ].filter(Boolean);
  return `step ${w.step}${trims.length ? ` without its ${trims.join(' and ')}` : ''}`;
}

function windowJson(w: WindowSpec): JsonObject {
  if (w.kind === 'context') return { kind: 'context' };
  if (w.kind === 'segment') return { kind: 'segment', index: w.index, of: w.of };
  return {
    kind: 'step',
    step: w.step,
    ...(w.trimStartSeconds !== undefined ? { trimStartSeconds: w.trimStartSeconds } : {}),
    ...(w.trimEndSeconds !== undefined ? { trimEndSeconds: w.trimEndSeconds } : {}),
  };
}

function finiteOrNull(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}

/** Only the finite numbers of `o` (JSON has no NaN; attribute limits carry no sigma). */
function finiteFields(o: Readonly<Record<string, number | undefined>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined && Number.isFinite(v)) out[k] = v;
  return out;
}

function judged(v: Violation): string {
  const l = v.limits;
  const version = l.version === null ? 'no control limits yet' : `limits v${l.version}`;
  switch (v.rule) {
    case 'SPEC_USL':
      return `value ${fmt(v.value)} > USL ${fmt(l.usl as number)}`;
    case 'SPEC_LSL':
      return `value ${fmt(v.value)} < LSL ${fmt(l.lsl as number)}`;
    case 'CUSUM_UPPER':
    case 'CUSUM_LOWER':
      return `${v.rule === 'CUSUM_UPPER' ? 'C+' : 'C-'} ${fmt(v.value)} sigma > h ${fmt(l.h as number)} (target ${fmt(l.center as number)}, sigma ${fmt(l.sigma as number)}, ${version})`;
    default: {
      const what = v.rule === 'EWMA' ? 'EWMA' : 'value';
      const lim = [
        l.lcl !== undefined ? `LCL ${fmt(l.lcl)}` : '',
        l.center !== undefined ? `centre ${fmt(l.center)}` : '',
        l.ucl !== undefined ? `UCL ${fmt(l.ucl)}` : '',
      ].filter(Boolean);
      return `${what} ${fmt(v.value)} (${[...lim, version].join(', ')})`;
    }
  }
}

/** A rule violation's limits as the alarm fields compare them: spec violations against the crossed spec limit. */
function comparedLimits(v: Violation): { lcl?: number; ucl?: number; center?: number } {
  let lcl = v.limits.lcl;
  let ucl = v.limits.ucl;
  if (v.rule === 'SPEC_USL') ucl = v.limits.usl;
  if (v.rule === 'SPEC_LSL') lcl = v.limits.lsl;
  const center = v.limits.center;
  return {
    ...(lcl !== undefined && Number.isFinite(lcl) ? { lcl } : {}),
    ...(ucl !== undefined && Number.isFinite(ucl) ? { ucl } : {}),
    ...(center !== undefined && Number.isFinite(center) ? { center } : {}),
  };
}

function ruleViolationText(v: Violation): string {
  const ind = v.indicator;
  return `${v.rule} on ${ind.svid} ${ind.statistic} (${windowText(ind.window)}): ${v.description}; ${judged(v)}`;
}

/**
 * One violation of a per-indicator rule (`N1`..`N8`, `WE1`..`WE4`, `EWMA`, `CUSUM_UPPER` /
 * `CUSUM_LOWER`, `SPEC_USL` / `SPEC_LSL`) as listed in a run alarm: the indicator (key, id, SVID,
 * statistic, window), the judged value (the charted statistic, the EWMA, the CUSUM sum in sigma units or
 * the raw value for spec limits), `lcl` / `ucl` / `center` as compared (the crossed spec limit for
 * `SPEC_*`; only the centre for CUSUM, which compares with h), every limit, the action and the points
 * forming the pattern, oldest first.
 */
function ruleViolationJson(v: Violation): JsonObject {
  const ind = v.indicator;
  return {
    rule: v.rule,
    indicatorKey: ind.key,
    indicatorId: ind.id,
    svid: ind.svid,
    statistic: ind.statistic,
    window: windowJson(ind.window),
    value: finiteOrNull(v.value),
    ...comparedLimits(v),
    limits: {
      version: v.limits.version,
      ...finiteFields({
        center: v.limits.center,
        sigma: v.limits.sigma,
        lcl: v.limits.lcl,
        ucl: v.limits.ucl,
        h: v.limits.h,
        usl: v.limits.usl,
        lsl: v.limits.lsl,
      }),
    },
    action: v.action,
    description: v.description,
    points: v.points.map((p) => ({ runId: p.runId, value: finiteOrNull(p.value) })),
  };
}

/**
 * The hold id of a run: `hold:<tool>:<chamber>:<sequence>`, deterministic so a replayed run places
 * the same hold (ids over 128 characters become `hold:<xxh64 of that>:<sequence>`).
 */
export function holdIdOf(chamber: ChamberRef, sequence: number): string {
  const id = `hold:${chamber.toolId}:${chamber.chamberId}:${sequence}`;
  return id.length <= RECORD_LIMITS.holdId ? id : `hold:${xxh64Hex(id)}:${sequence}`;
}

/**
 * The hold a run places when the rules returned HOLD_CHAMBER: `ruleId` `indicator-action` when a
 * violated indicator's action is HOLD_CHAMBER, else `escalation` (N alarmed runs within the last M);
 * `reason` the rules' reasons with the run.
 */
export function holdFor(
  actions: readonly Action[],
  violations: readonly Violation[],
  run: RunIdentity,
): HoldInput | undefined {
  const hold = actions.find((a): a is Extract<Action, { type: 'HOLD_CHAMBER' }> => a.type === 'HOLD_CHAMBER');
  if (!hold) return undefined;
  const byIndicator = violations.some((v) => v.action === 'HOLD_CHAMBER');
  return {
    holdId: holdIdOf(run.chamber, run.sequence),
    ruleId: byIndicator ? 'indicator-action' : 'escalation',
    reason: clip(
      `${hold.reasons.join('; ')} (run ${run.runId}, sequence ${run.sequence}, recipe ${run.recipe})`,
      RECORD_LIMITS.message,
    ),
  };
}

/** Parses a monitor key `m/<svid>@<window>:<statistic>` (after the `<recipe>|` prefix). */
function monitorParts(key: string): { svid: string; window: string; statistic: string } | undefined {
  const bar = key.indexOf('|');
  const m = /^m\/(.*)@([^@:]*):([a-z0-9_]+(?:-[a-z0-9_]+)?)$/.exec(bar >= 0 ? key.slice(bar + 1) : key);
  return m ? { svid: m[1] as string, window: m[2] as string, statistic: m[3] as string } : undefined;
}

function monitorText(v: MonitorViolation): string {
  const who = (key: string) => {
    const p = monitorParts(key);
    return p ? `${p.svid} ${p.statistic} in ${p.window}` : key;
  };
  const drivers = (v.contributions ?? [])
    .slice(0, 3)
    .map((c) => `${who(c.key)} ${(100 * c.share).toFixed(0)} %`)
    .join(', ');
  switch (v.rule) {
    case 'T2':
      return `T² ${fmt(v.value)} > ${fmt(v.limit as number)}${drivers ? ` (driven by ${drivers})` : ''}`;
    case 'SPE':
      return `SPE ${fmt(v.value)} > ${fmt(v.limit as number)}${drivers ? ` (driven by ${drivers})` : ''}`;
    case 'MEWMA':
      return `MEWMA ${fmt(v.value)} > ${fmt(v.limit as number)}${drivers ? ` (driven by ${drivers})` : ''}`;
    case 'LIMIT':
      return `${who(v.key)} ${fmt(v.value)} outside [${fmt(v.lcl as number)}, ${fmt(v.ucl as number)}]`;
    case 'RESIDUAL':
      return `${who(v.key)} ${fmt(v.value)} residual sds from what the other indicators predict (limit ${fmt(v.limit as number)})`;
    case 'CONSTANT':
      return `${who(v.key)} ${fmt(v.value)} changed from its constant ${fmt(v.center as number)}`;
    case 'REGIME':
      return `the levels of ${fmt(v.value)} sensors moved together without an equipment event: a new regime, re-centred from the next runs`;
  }
}

function monitorViolationJson(v: MonitorViolation): JsonObject {
  const parts = monitorParts(v.key);
  return {
    rule: v.rule,
    indicatorKey: v.key,
    ...(parts ? { svid: parts.svid, window: parts.window, statistic: parts.statistic } : {}),
    value: finiteOrNull(v.value),
    ...finiteFields({ limit: v.limit, lcl: v.lcl, ucl: v.ucl, center: v.center }),
    ...(v.contributions
      ? {
          contributions: v.contributions.map((c) => {
            const p = monitorParts(c.key);
            return { indicatorKey: c.key, share: finiteOrNull(c.share), ...(p ? { svid: p.svid, window: p.window, statistic: p.statistic } : {}) };
          }),
        }
      : {}),
  };
}

/** What the chamber monitor said about a run, for its alarm. */
export interface MonitorAlarmContext {
  readonly modelKey: string;
  readonly action: string;
  readonly t2: number | null;
  readonly spe: number | null;
  readonly modelVersion: number | null;
}

const MONITOR_ORDER = { REGIME: -1, T2: 0, SPE: 1, MEWMA: 2, CONSTANT: 3, LIMIT: 4, RESIDUAL: 5 } as const;

/** Violations a run alarm lists (worst first); the rest are counted in `details.byRule`. */
export const MAX_LISTED_VIOLATIONS = 100;

/**
 * UTF-8 bytes of the listed violations' JSON at most (the first is always listed): with long SVID
 * names and five contributions each, 100 violations came to 466 KB; bounded here, a run alarm stays
 * under about 80 KB whatever the names and counts (docs/architecture.md, value sizes).
 */
export const MAX_LISTED_VIOLATION_BYTES = 64 * 1024;

const utf8 = new TextEncoder();

/**
 * The violations' JSON in order, as many as fit {@link MAX_LISTED_VIOLATIONS} and
 * {@link MAX_LISTED_VIOLATION_BYTES} (at least the first), and how many of each input were listed.
 */
function listWithin(monitor: readonly MonitorViolation[], rules: readonly Violation[]): { json: JsonObject[]; monitor: number; rules: number } {
  const json: JsonObject[] = [];
  let bytes = 0;
  const fits = (j: JsonObject): boolean => {
    if (json.length >= MAX_LISTED_VIOLATIONS) return false;
    const b = utf8.encode(JSON.stringify(j)).length + 1;
    if (json.length > 0 && bytes + b > MAX_LISTED_VIOLATION_BYTES) return false;
    json.push(j);
    bytes += b;
    return true;
  };
  let m = 0;
  while (m < monitor.length && fits(monitorViolationJson(monitor[m] as MonitorViolation))) m++;
  let r = 0;
  if (m === monitor.length) while (r < rules.length && fits(ruleViolationJson(rules[r] as Violation))) r++;
  return { json, monitor: m, rules: r };
}

/** How far beyond its limit a monitor violation is (1 at the limit; a changed constant ranks first). */
function severity(v: MonitorViolation): number {
  if (v.rule === 'CONSTANT') return Infinity;
  if (v.rule === 'LIMIT' && v.center !== undefined && v.ucl !== undefined && v.ucl > v.center) return Math.abs(v.value - v.center) / (v.ucl - v.center);
  return v.limit !== undefined && v.limit > 0 ? v.value / v.limit : 0;
}

/**
 * The one alarm of a run (`ruleId` `RUN`), whatever flagged it: the violations of the chamber
 * monitor (T², SPE, MEWMA, CONSTANT, LIMIT, RESIDUAL, with contributions) and of the per-indicator
 * rules (Western Electric, Nelson, EWMA, CUSUM, spec limits) in `details.violations`, the monitor's
 * first (worst rule first, then furthest beyond its limit), at most {@link MAX_LISTED_VIOLATIONS} of
 * them in at most {@link MAX_LISTED_VIOLATION_BYTES}; `details.violationCount` and `details.byRule`
 * count every one; the message lists them too. The alarm's own fields summarise its lead
 * violation: with a monitor violation, `indicatorKey` the model key, `value` the run's T² (null before
 * a PCA model), `ucl` the T² limit, SVID and statistic those of the top contributor (or the first
 * univariate violation); else the first rule violation's indicator, value and limits as compared.
 * `action` is HOLD_CHAMBER when any violation's action is.
 *
 * @returns undefined when there is no violation (a run with none raises no alarm).
 */
export function runAlarm(
  ruleViolations: readonly Violation[],
  monitorViolations: readonly MonitorViolation[],
  run: RunIdentity,
  monitor: MonitorAlarmContext | undefined,
): AlarmInput | undefined {
  const monitored = monitor !== undefined && monitorViolations.length > 0 ? monitor : undefined;
  const sorted = monitored ? [...monitorViolations].sort((a, b) => MONITOR_ORDER[a.rule] - MONITOR_ORDER[b.rule] || severity(b) - severity(a)) : [];
  if (sorted.length === 0 && ruleViolations.length === 0) return undefined;
  const { toolId, chamberId } = run.chamber;
  const rules = [...new Set([...sorted.map((v) => v.rule), ...ruleViolations.map((v) => v.rule)])];
  const count = sorted.length + ruleViolations.length;
  // A run far out of control can violate thousands of indicator limits: the worst are listed, every
  // one is counted by rule, so the alarm stays far below the store's and NATS's size limits.
  const listed = listWithin(sorted, ruleViolations);
  const listedMonitor = sorted.slice(0, listed.monitor);
  const listedRules = ruleViolations.slice(0, listed.rules);
  const byRule: Record<string, number> = {};
  for (const v of [...sorted, ...ruleViolations]) byRule[v.rule] = (byRule[v.rule] ?? 0) + 1;
  const unlisted = count - listedMonitor.length - listedRules.length;
  const message = clip(
    `${rules.join('+')} on ${toolId}:${chamberId} run ${run.runId} (recipe ${run.recipe}): ` +
      `${count} violation${count === 1 ? '' : 's'}: ${[...listedMonitor.map(monitorText), ...listedRules.map(ruleViolationText)].join('; ')}` +
      (unlisted > 0 ? `; and ${unlisted} more` : ''),
    RECORD_LIMITS.message,
  );
  const hold = ruleViolations.some((v) => v.action === 'HOLD_CHAMBER') || monitored?.action === 'HOLD_CHAMBER';
  const details: JsonObject = {
    kind: 'run',
    toolId,
    chamberId,
    runId: run.runId,
    sequence: run.sequence,
    recipe: run.recipe,
    modelVersion: monitored?.modelVersion ?? null,
    rules,
    t2: monitored?.t2 == null ? null : finiteOrNull(monitored.t2),
    spe: monitored?.spe == null ? null : finiteOrNull(monitored.spe),
    violationCount: count,
    byRule,
    violations: listed.json,
  };
  const common = { ruleId: 'RUN', action: hold ? 'HOLD_CHAMBER' : 'ALARM', recipe: run.recipe, message, details };
  if (monitored) {
    const lead = sorted[0] as MonitorViolation;
    const leadKey = lead.contributions?.[0]?.key ?? lead.key;
    const parts = monitorParts(leadKey);
    const t2v = sorted.find((v) => v.rule === 'T2');
    return {
      ...common,
      indicatorKey: monitored.modelKey,
      value: monitored.t2 === null ? null : finiteOrNull(monitored.t2),
      ...(t2v?.limit !== undefined && Number.isFinite(t2v.limit) ? { ucl: t2v.limit } : {}),
      ...(parts ? { svid: parts.svid, statistic: parts.statistic, step: parts.window } : {}),
    };
  }
  const lead = ruleViolations[0] as Violation;
  const ind = lead.indicator;
  return {
    ...common,
    indicatorKey: ind.key,
    value: finiteOrNull(lead.value),
    ...comparedLimits(lead),
    ...(ind.window.kind === 'step' ? { step: ind.window.step } : {}),
    svid: ind.svid,
    statistic: ind.statistic,
  };
}
