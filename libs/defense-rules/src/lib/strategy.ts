import { STATISTICS, type ChartSpec, type StatisticName, type WindowSpec } from '@defender/uchart';
import { z } from 'zod';
import { StrategyValidationError, type StrategyIssue } from './errors';
import { DEFAULT_STRATEGY_DOCUMENT } from './default-strategy';
import { DEFAULT_EVENT_ACTIONS, DEFAULT_MONITOR_STATISTICS, EVENT_ACTIONS, statisticParts, type Budget, type EventAction, type MonitorConfig } from './monitor-config';
import { NAMED_RULES, NELSON_RULES, WESTERN_ELECTRIC_RULES, type RuleName, type RunRule } from './rules';

/** The strategy document version this build reads. */
export const STRATEGY_SCHEMA_VERSION = 1;

/** What a violation asks for. HOLD_CHAMBER stops the chamber; every violation also raises an alarm. */
export type ActionType = 'ALARM' | 'HOLD_CHAMBER';

/** Escalation: `alarms` alarmed runs within the last `withinRuns` runs (the current one included) -> action. */
export interface EscalationRule {
  readonly alarms: number;
  readonly withinRuns: number;
  readonly action: 'HOLD_CHAMBER';
}

/** Where the size (exposure) of a p / np / u chart point comes from when computed from a trace. */
export type ExposureSource = 'window-samples' | 'window-seconds';

/** One charted indicator of a strategy, with every default applied. */
export interface IndicatorConfig {
  /** Unique in the strategy; also the history key (with `/<svid>` appended when `svid` is `*`). */
  readonly id: string;
  /** An SVID name, or `*` for every SVID of the trace. */
  readonly svid: string;
  readonly window: WindowSpec;
  readonly statistic: StatisticName;
  readonly chart: ChartSpec;
  readonly baseline: { readonly minRuns: number; readonly exclusion: { readonly maxPasses: number } | false };
  /** Run rules (Shewhart-type charts only; EWMA / CUSUM signal on their own limits). */
  readonly rules: readonly RunRule[];
  /** Specification limits on the raw indicator value; either may be absent (one-sided). */
  readonly spec?: { readonly usl?: number; readonly lsl?: number };
  /** p / np / u charts: the size of a point computed from a trace. */
  readonly exposure: ExposureSource;
  readonly action: ActionType;
}

/** A validated defense strategy (schema version 1). */
export interface DefenseStrategy {
  readonly schemaVersion: 1;
  readonly name: string;
  /** Chamber key `<tool_id>:<chamber_id>` and / or recipe the strategy applies to; empty = any. */
  readonly scope: { readonly chamber?: string; readonly recipe?: string };
  readonly indicators: readonly IndicatorConfig[];
  /** Chamber monitoring (multivariate + univariate over every SVID x window x statistic), when set. */
  readonly monitor?: MonitorConfig;
  /** The chamber's false-alarm budget (the monitor's charts share it). */
  readonly budget: Budget;
  readonly escalation: readonly EscalationRule[];
}

const RULE_NAMES = Object.keys(NAMED_RULES) as [RuleName, ...RuleName[]];
const PRESETS = ['western-electric', 'nelson'] as const;

const finite = () => z.number();
const sigmaMethod = z.enum(['moving-range', 'sample-sd', 'sample-sd-unbiased']).default('moving-range');
const nSigma = finite().positive().default(3);

const windowSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('context') }),
  z
    .strictObject({ kind: z.literal('segment'), index: z.number().int().min(0), of: z.number().int().min(1).max(100) })
    .refine((w) => w.index < w.of, { message: 'index must be less than of', path: ['index'] }),
  z.strictObject({
    kind: z.literal('step'),
    step: z.string().min(1),
    trimStartSeconds: finite().min(0).optional(),
    trimEndSeconds: finite().min(0).optional(),
  }),
]);

const chartSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('individuals'), sigmaMethod, nSigma }),
  z.strictObject({
    type: z.literal('ewma'),
    lambda: finite().gt(0).lte(1).default(0.2),
    L: finite().positive().default(3),
    sigmaMethod,
  }),
  z.strictObject({
    type: z.literal('cusum'),
    k: finite().min(0).default(0.5),
    h: finite().positive().default(5),
    headStart: finite().min(0).default(0),
    resetOnSignal: z.boolean().default(false),
    sigmaMethod,
  }),
  z.strictObject({ type: z.literal('p'), nSigma }),
  z.strictObject({ type: z.literal('np'), nSigma }),
  z.strictObject({ type: z.literal('c'), nSigma }),
  z.strictObject({ type: z.literal('u'), nSigma }),
]);

const ruleEntry = z.union([
  z.enum([...PRESETS, ...RULE_NAMES]),
  z.strictObject({
    rule: z.enum(RULE_NAMES),
    run: z.number().int().min(2).optional(),
    count: z.number().int().min(1).optional(),
    of: z.number().int().min(2).optional(),
    sigmas: finite().positive().optional(),
  }),
]);

type RuleEntry = z.infer<typeof ruleEntry>;

const indicatorSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_.:-]+$/, 'must be 1+ characters of A-Z a-z 0-9 _ . : -'),
  svid: z.string().min(1),
  window: windowSchema.default({ kind: 'context' }),
  statistic: z.enum(STATISTICS),
  chart: chartSchema.prefault({ type: 'individuals' }),
  baseline: z
    .strictObject({
      minRuns: z.number().int().min(2).default(20),
      exclusion: z
        .union([z.literal(false), z.strictObject({ maxPasses: z.number().int().min(1) })])
        .default({ maxPasses: 3 }),
    })
    .prefault({}),
  rules: z.array(ruleEntry).optional(),
  spec: z.strictObject({ usl: finite().optional(), lsl: finite().optional() }).optional(),
  exposure: z.enum(['window-samples', 'window-seconds']).optional(),
  action: z.enum(['ALARM', 'HOLD_CHAMBER']).default('ALARM'),
});

const monitorSchema = z.strictObject({
  svids: z.union([z.literal('*'), z.array(z.string().min(1)).min(1)]).default('*'),
  windows: z.enum(['steps', 'context']).default('steps'),
  segments: z.number().int().min(1).max(20).default(4),
  statistics: z
    .array(
      z.string().refine((x) => statisticParts(x) !== undefined, {
        message: `a statistic (${STATISTICS.join(', ')}), the difference a-b of two, or a-run_b (b over the whole run)`,
      }),
    )
    .min(1)
    .default([...DEFAULT_MONITOR_STATISTICS])
    .refine((a) => new Set(a).size === a.length, { message: 'lists a statistic more than once' }),
  despike: z.boolean().default(true),
  baseline: z
    .strictObject({
      minRuns: z.number().int().min(10).max(500).default(30),
      extendTo: z.union([z.literal(false), z.number().int().min(11).max(500)]).default(90),
    })
    .refine((b) => b.extendTo === false || b.extendTo > b.minRuns, { message: 'extendTo must exceed minRuns (or be false)', path: ['extendTo'] })
    .prefault({}),
  adapt: z
    .union([z.literal(false), z.strictObject({ lambda: finite().gt(0).lte(0.5).default(0.05) })])
    .default({ lambda: 0.05 }),
  univariate: z.boolean().default(true),
  pca: z
    .strictObject({
      variance: finite().gt(0).lt(1).default(0.9),
      maxComponents: z.number().int().min(1).max(12).default(4),
    })
    .prefault({}),
  mewma: z.union([z.literal(false), z.strictObject({ lambda: finite().gt(0).lte(1).default(0.2) })]).default(false),
  action: z.enum(['ALARM', 'HOLD_CHAMBER']).default('ALARM'),
  // What an equipment event of each kind does; the kinds left out keep their default.
  events: z
    .strictObject(Object.fromEntries(Object.keys(DEFAULT_EVENT_ACTIONS).map((k) => [k, z.enum(EVENT_ACTIONS as [EventAction, ...EventAction[]]).optional()])))
    .transform((given) => ({ ...DEFAULT_EVENT_ACTIONS, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) }))
    .prefault({}),
  regime: z
    .union([z.literal(false), z.strictObject({ share: finite().gt(0).lte(1).default(0.25), min: z.number().int().min(1).default(3) })])
    .default({ share: 0.25, min: 3 }),
  // One count of each listed SVID, in its unit: a positive finite number, never defaulted.
  resolution: z.record(z.string().min(1), finite().gt(0, { message: 'a resolution must be a positive finite number (one count of the SVID)' })).optional(),
});

const strategySchema = z.strictObject({
  schemaVersion: z.literal(STRATEGY_SCHEMA_VERSION),
  name: z.string().min(1),
  scope: z
    .strictObject({ chamber: z.string().min(1).optional(), recipe: z.string().min(1).optional() })
    .default({}),
  indicators: z.array(indicatorSchema).default([]),
  monitor: monitorSchema.optional(),
  budget: z.strictObject({ alarmArl: finite().min(20).max(1e7).default(370) }).prefault({}),
  escalation: z
    .array(
      z.strictObject({
        alarms: z.number().int().min(1),
        withinRuns: z.number().int().min(1),
        action: z.literal('HOLD_CHAMBER'),
      }),
    )
    .default([{ alarms: 2, withinRuns: 5, action: 'HOLD_CHAMBER' }]),
});

type RawIndicator = z.infer<typeof indicatorSchema>;

const COUNT_FIELDS: Record<RunRule['kind'], readonly ('run' | 'count' | 'of' | 'sigmas')[]> = {
  'beyond-limits': [],
  'same-side': ['run'],
  trend: ['run'],
  alternating: ['run'],
  zone: ['count', 'of', 'sigmas'],
  stratification: ['run', 'sigmas'],
  mixture: ['run', 'sigmas'],
};

/** Expands presets and overrides into rules; pushes an issue for each misuse. */
function resolveRules(entries: readonly RuleEntry[], path: string, issues: StrategyIssue[]): RunRule[] {
  const out: RunRule[] = [];
  const seen = new Set<string>();
  const add = (r: RunRule, at: string) => {
    if (seen.has(r.id)) issues.push({ path: at, message: `rule ${r.id} is listed more than once` });
    seen.add(r.id);
    out.push(r);
  };
  entries.forEach((e, i) => {
    const at = `${path}.${i}`;
    if (e === 'western-electric') Object.values(WESTERN_ELECTRIC_RULES).forEach((r) => add(r, at));
    else if (e === 'nelson') Object.values(NELSON_RULES).forEach((r) => add(r, at));
    else if (typeof e === 'string') add(NAMED_RULES[e], at);
    else {
      const base = NAMED_RULES[e.rule];
      const allowed = COUNT_FIELDS[base.kind];
      for (const f of ['run', 'count', 'of', 'sigmas'] as const) {
        if (e[f] !== undefined && !allowed.includes(f)) {
          issues.push({
            path: `${at}.${f}`,
            message: `${e.rule} (${base.kind}) takes ${allowed.length ? allowed.join(', ') : 'no counts'}`,
          });
        }
      }
      const merged = {
        ...base,
        ...Object.fromEntries(allowed.filter((f) => e[f] !== undefined).map((f) => [f, e[f]])),
      } as RunRule;
      if (merged.kind === 'zone' && merged.count > merged.of) {
        issues.push({
          path: at,
          message: `${e.rule}: count (${merged.count}) must not exceed of (${merged.of})`,
        });
      }
      add(merged, at);
    }
  });
  return out;
}

function toIndicator(raw: RawIndicator, path: string, issues: StrategyIssue[]): IndicatorConfig {
  const chart = raw.chart as ChartSpec;
  const shewhart = chart.type !== 'ewma' && chart.type !== 'cusum';
  if (!shewhart && raw.rules && raw.rules.length > 0) {
    issues.push({
      path: `${path}.rules`,
      message: `run rules apply to individuals and attribute charts; a ${chart.type} chart signals on its own limits (leave rules empty)`,
    });
  }
  if (chart.type === 'cusum' && !(chart.headStart < chart.h)) {
    issues.push({ path: `${path}.chart.headStart`, message: `must be less than h (${chart.h})` });
  }
  if (raw.exposure !== undefined && chart.type !== 'p' && chart.type !== 'np' && chart.type !== 'u') {
    issues.push({ path: `${path}.exposure`, message: 'applies to p, np and u charts only' });
  }
  if (
    raw.spec &&
    raw.spec.usl !== undefined &&
    raw.spec.lsl !== undefined &&
    !(raw.spec.lsl < raw.spec.usl)
  ) {
    issues.push({
      path: `${path}.spec`,
      message: `lsl (${raw.spec.lsl}) must be less than usl (${raw.spec.usl})`,
    });
  }
  const rules = shewhart ? resolveRules(raw.rules ?? ['western-electric'], `${path}.rules`, issues) : [];
  return {
    id: raw.id,
    svid: raw.svid,
    window: raw.window,
    statistic: raw.statistic,
    chart,
    baseline: raw.baseline,
    rules,
    ...(raw.spec ? { spec: raw.spec } : {}),
    exposure: raw.exposure ?? 'window-samples',
    action: raw.action,
  };
}

/** A strategy document's validation result. */
export type StrategyValidation =
  | { readonly ok: true; readonly strategy: DefenseStrategy }
  | { readonly ok: false; readonly issues: readonly StrategyIssue[] };

/**
 * Validates a defense strategy document (a parsed JSON value, or JSON text) and applies defaults.
 * Never throws; see {@link parseStrategy} for the throwing form.
 */
export function validateStrategy(input: unknown): StrategyValidation {
  let doc = input;
  if (typeof input === 'string') {
    try {
      doc = JSON.parse(input);
    } catch (err) {
      return { ok: false, issues: [{ path: '', message: `not valid JSON (${(err as Error).message})` }] };
    }
  }
  if (typeof doc === 'object' && doc !== null && 'schemaVersion' in doc) {
    const v = (doc as { schemaVersion: unknown }).schemaVersion;
    if (v !== STRATEGY_SCHEMA_VERSION) {
      return {
        ok: false,
        issues: [
          {
            path: 'schemaVersion',
            message: `unsupported version ${JSON.stringify(v)} (this build reads ${STRATEGY_SCHEMA_VERSION})`,
          },
        ],
      };
    }
  }
  const parsed = strategySchema.safeParse(doc);
  if (!parsed.success) {
    return {
      ok: false,
      issues: parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
    };
  }
  const issues: StrategyIssue[] = [];
  const ids = new Set<string>();
  const indicators = parsed.data.indicators.map((raw, i) => {
    if (ids.has(raw.id))
      issues.push({ path: `indicators.${i}.id`, message: `duplicate indicator id "${raw.id}"` });
    ids.add(raw.id);
    return toIndicator(raw, `indicators.${i}`, issues);
  });
  parsed.data.escalation.forEach((e, i) => {
    if (e.alarms > e.withinRuns) {
      issues.push({
        path: `escalation.${i}`,
        message: `alarms (${e.alarms}) must not exceed withinRuns (${e.withinRuns})`,
      });
    }
  });
  if (indicators.length === 0 && !parsed.data.monitor) {
    issues.push({ path: 'indicators', message: 'a strategy needs at least one indicator or a monitor' });
  }
  if (issues.length > 0) return { ok: false, issues };
  const monitor = parsed.data.monitor as MonitorConfig | undefined;
  return {
    ok: true,
    strategy: {
      schemaVersion: STRATEGY_SCHEMA_VERSION,
      name: parsed.data.name,
      scope: parsed.data.scope,
      indicators,
      ...(monitor ? { monitor } : {}),
      budget: parsed.data.budget,
      escalation: parsed.data.escalation,
    },
  };
}

/**
 * Validates a defense strategy document and applies defaults.
 *
 * @throws {@link StrategyValidationError} listing every problem (unknown keys, wrong types, values out
 *   of range, an unsupported `schemaVersion`, duplicate ids, rules on EWMA / CUSUM charts, counts that
 *   do not apply to a rule, lsl >= usl, ...).
 */
export function parseStrategy(input: unknown): DefenseStrategy {
  const r = validateStrategy(input);
  if (!r.ok) throw new StrategyValidationError(r.issues);
  return r.strategy;
}

/** The strategy for chambers without one ({@link DEFAULT_STRATEGY_DOCUMENT}, the `default` preset). */
export const DEFAULT_STRATEGY: DefenseStrategy = parseStrategy(DEFAULT_STRATEGY_DOCUMENT);

/**
 * Picks the strategy for a run: the most specific scope that matches (chamber + recipe, then chamber,
 * then recipe, then unscoped), else {@link DEFAULT_STRATEGY}. Ties go to the earlier strategy.
 */
export function resolveStrategy(
  strategies: readonly DefenseStrategy[],
  run: { readonly chamber: string; readonly recipe?: string },
): DefenseStrategy {
  let best: DefenseStrategy | undefined;
  let bestScore = -1;
  for (const s of strategies) {
    const { chamber, recipe } = s.scope;
    if (chamber !== undefined && chamber !== run.chamber) continue;
    if (recipe !== undefined && recipe !== run.recipe) continue;
    const score = (chamber !== undefined ? 2 : 0) + (recipe !== undefined ? 1 : 0);
    if (score > bestScore) {
      best = s;
      bestScore = score;
    }
  }
  return best ?? DEFAULT_STRATEGY;
}
