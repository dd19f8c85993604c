import { indicatorMeaning } from '../chambers/indicator-words';
import { indicatorLabel } from '../chambers/monitor-keys';
import { finiteOrNull, jsonObject, stringOrNull } from '../json-fields';

/** One indicator's share of a T² / SPE / MEWMA signal. */
export interface RunContribution {
  readonly indicatorKey: string;
  /** `Pressure mean in Main` (SVID, statistic, window). */
  readonly label: string;
  /** What the indicator measures, in words (`indicatorMeaning`): the contribution bar's tooltip. */
  readonly meaning: string;
  /** Share of the statistic, 0..1; null for a univariate violation (it has no share). */
  readonly share: number | null;
}

/** One violation of a run-level alarm. */
export interface RunViolationView {
  /** `T2`, `SPE`, `MEWMA`, `CONSTANT`, `LIMIT`, `RESIDUAL`. */
  readonly rule: string;
  readonly indicatorKey: string;
  readonly label: string;
  readonly value: number | null;
  readonly limit: number | null;
  readonly lcl: number | null;
  readonly ucl: number | null;
  readonly center: number | null;
  /** The indicators that drove a T² / SPE / MEWMA signal, largest share first. */
  readonly contributions: readonly RunContribution[];
}

/** A run-level alarm of the chamber monitor (`ruleId` `RUN`), read from its `details`. */
export interface RunAlarmView {
  readonly modelVersion: number | null;
  /** The rules that fired, worst first (`T2`, `SPE`, `MEWMA`, `CONSTANT`, `LIMIT`, `RESIDUAL`). */
  readonly rules: readonly string[];
  readonly t2: number | null;
  readonly t2Limit: number | null;
  readonly spe: number | null;
  readonly speLimit: number | null;
  /** Every violation of the run, worst rule first. */
  readonly violations: readonly RunViolationView[];
  /**
   * The run's top contributors (at most {@link TOP_CONTRIBUTORS}): those of its first T² / SPE / MEWMA
   * violation with contributions, else the indicators of its univariate violations.
   */
  readonly top: readonly (RunContribution & { readonly rule: string })[];
}

/** Contributors a feed line names. */
export const TOP_CONTRIBUTORS = 3;

const ORDER: Readonly<Record<string, number>> = { T2: 0, SPE: 1, MEWMA: 2, CONSTANT: 3, LIMIT: 4, RESIDUAL: 5 };
const rank = (rule: string): number => ORDER[rule] ?? 6;

function contributionOf(v: unknown): RunContribution | null {
  const c = jsonObject(v);
  const key = stringOrNull(c?.['indicatorKey']);
  if (!c || !key) return null;
  return { indicatorKey: key, label: indicatorLabel(key), meaning: indicatorMeaning(key), share: finiteOrNull(c['share']) };
}

function violationOf(v: unknown): RunViolationView | null {
  const o = jsonObject(v);
  const rule = stringOrNull(o?.['rule']);
  const key = stringOrNull(o?.['indicatorKey']);
  if (!o || !rule || !key) return null;
  const list = Array.isArray(o['contributions']) ? o['contributions'] : [];
  return {
    rule,
    indicatorKey: key,
    label: indicatorLabel(key),
    value: finiteOrNull(o['value']),
    limit: finiteOrNull(o['limit']),
    lcl: finiteOrNull(o['lcl']),
    ucl: finiteOrNull(o['ucl']),
    center: finiteOrNull(o['center']),
    contributions: list.map(contributionOf).filter((c): c is RunContribution => c !== null).sort((a, b) => (b.share ?? 0) - (a.share ?? 0)),
  };
}

/**
 * The run-level alarm in an alarm's `ruleId` and `details` (as the pipeline's `monitorAlarm` writes
 * them: `details.kind` `run`), or undefined for any other alarm. Fields of the wrong type read as
 * absent; violations without a rule or indicator are left out.
 */
export function runAlarmOf(ruleId: string | null | undefined, details: unknown): RunAlarmView | undefined {
  const d = jsonObject(details);
  if (ruleId !== 'RUN' || !d || d['kind'] !== 'run') return undefined;
  const violations = (Array.isArray(d['violations']) ? d['violations'] : [])
    .map(violationOf)
    .filter((v): v is RunViolationView => v !== null)
    .sort((a, b) => rank(a.rule) - rank(b.rule));
  const listed = Array.isArray(d['rules']) ? d['rules'].filter((r): r is string => typeof r === 'string') : [];
  const rules = [...new Set([...listed, ...violations.map((v) => v.rule)])].sort((a, b) => rank(a) - rank(b));
  const driven = violations.find((v) => v.contributions.length > 0);
  const top = driven
    ? driven.contributions.slice(0, TOP_CONTRIBUTORS).map((c) => ({ ...c, rule: driven.rule }))
    : violations.slice(0, TOP_CONTRIBUTORS).map((v) => ({ indicatorKey: v.indicatorKey, label: v.label, meaning: indicatorMeaning(v.indicatorKey), share: null, rule: v.rule }));
  return {
    modelVersion: finiteOrNull(d['modelVersion']),
    rules,
    t2: finiteOrNull(d['t2']),
    t2Limit: violations.find((v) => v.rule === 'T2')?.limit ?? null,
    spe: finiteOrNull(d['spe']),
    speLimit: violations.find((v) => v.rule === 'SPE')?.limit ?? null,
    violations,
    top,
  };
}
