import { RECORD_LIMITS, type AlarmInput, type ChamberRef, type HoldInput, type JsonObject } from '@defender/contracts';
import type { Action, Violation } from '@defender/defense-rules';
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
  const trims = [
    w.trimStartSeconds ? `first ${w.trimStartSeconds} s` : '',
    w.trimEndSeconds ? `last ${w.trimEndSeconds} s` : '',
  ].filter(Boolean);
  return `step ${w.step}${trims.length ? ` without its ${trims.join(' and ')}` : ''}`;
}

function windowJson(w: WindowSpec): JsonObject {
  if (w.kind === 'context') return { kind: 'context' };
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

/**
 * One stored alarm per violation, with full context: `ruleId` is the violation's rule (`N1`..`N8`,
 * `WE1`..`WE4`, `EWMA`, `CUSUM_UPPER` / `CUSUM_LOWER`, `SPEC_USL` / `SPEC_LSL`), `indicatorKey` the
 * point's key, `value` the judged value (the charted statistic, the EWMA, the CUSUM sum in sigma units
 * or the raw value for spec limits). `center` / `lcl` / `ucl` are the limits the value was compared
 * with: the point's control limits (EWMA: its exact limits at that point), the crossed spec limit for
 * `SPEC_*` (as `ucl` or `lcl`), only the centre for CUSUM (it compares with h, in `details.limits`).
 * `details`: description, run, sequence, chamber, recipe, the indicator (id, key, SVID, statistic,
 * window), every limit (version, centre, sigma, lcl, ucl, h, usl, lsl) and the points forming the
 * pattern, oldest first.
 */
export function violationToAlarm(v: Violation, run: RunIdentity): AlarmInput {
  const { toolId, chamberId } = run.chamber;
  const ind = v.indicator;
  const step = ind.window.kind === 'step' ? ind.window.step : undefined;
  let lcl = v.limits.lcl;
  let ucl = v.limits.ucl;
  if (v.rule === 'SPEC_USL') ucl = v.limits.usl;
  if (v.rule === 'SPEC_LSL') lcl = v.limits.lsl;
  const center = v.limits.center;
  const message = clip(
    `${v.rule} on ${toolId}:${chamberId} run ${run.runId} (recipe ${run.recipe}, ${windowText(ind.window)}, ` +
      `SVID ${ind.svid}, ${ind.statistic}): ${v.description}; ${judged(v)}`,
    RECORD_LIMITS.message,
  );
  const details: JsonObject = {
    description: v.description,
    toolId,
    chamberId,
    runId: run.runId,
    sequence: run.sequence,
    recipe: run.recipe,
    indicator: { key: ind.key, id: ind.id, svid: ind.svid, statistic: ind.statistic, window: windowJson(ind.window) },
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
    points: v.points.map((p) => ({ runId: p.runId, value: finiteOrNull(p.value) })),
  };
  return {
    ruleId: v.rule,
    indicatorKey: ind.key,
    action: v.action,
    value: finiteOrNull(v.value),
    ...(lcl !== undefined && Number.isFinite(lcl) ? { lcl } : {}),
    ...(ucl !== undefined && Number.isFinite(ucl) ? { ucl } : {}),
    ...(center !== undefined && Number.isFinite(center) ? { center } : {}),
    recipe: run.recipe,
    ...(step !== undefined ? { step } : {}),
    svid: ind.svid,
    statistic: ind.statistic,
    message,
    details,
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
