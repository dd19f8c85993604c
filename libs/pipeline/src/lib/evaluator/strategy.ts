import { memoryCovers, strategyScopeConflicts, type ChamberMemory, type StrategyScopeInfo } from '@defender/contracts';
import {
  DEFAULT_STRATEGY,
  escalationHistoryRuns,
  steadyChartRuns,
  requiredHistoryRuns,
  resolveStrategy,
  steadyHistoryRuns,
  validateStrategy,
  type DefenseStrategy,
  type StrategyIssue,
} from '@defender/defense-rules';

/** A stored strategy document, validated: the strategy, or the issues that make it unusable. */
export type StoredStrategy =
  | { readonly kind: 'none' }
  | { readonly kind: 'valid'; readonly strategy: DefenseStrategy }
  | { readonly kind: 'invalid'; readonly issues: readonly StrategyIssue[] };

/**
 * Validates stored strategy documents with the defense-rules schema, remembering the last
 * `capacity` distinct documents (by their JSON text) so a chamber's runs do not re-parse the same
 * document every time. Pure: the result depends only on the document.
 */
export class StrategyCache {
  private readonly entries = new Map<string, StoredStrategy>();

  constructor(private readonly capacity = 256) {}

  /**
   * `undefined` / `null` (no stored strategy) -> `none`; a JSON object or JSON text is validated.
   * Keyed by content, not identity, so a document changed in place is validated afresh.
   */
  get(doc: unknown): StoredStrategy {
    if (doc === undefined || doc === null) return { kind: 'none' };
    const key = cacheKey(doc);
    if (key === undefined) return toStored(doc);
    const hit = this.entries.get(key);
    if (hit) return hit;
    const stored = toStored(doc);
    if (this.entries.size >= this.capacity) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, stored);
    return stored;
  }
}

function cacheKey(doc: unknown): string | undefined {
  if (typeof doc === 'string') return `s${doc}`;
  if (typeof doc !== 'object') return undefined;
  try {
    return `j${JSON.stringify(doc)}`;
  } catch (err) {
    // Not JSON-serialisable (a cycle, a BigInt): validate without caching; the schema rejects it.
    if (err instanceof TypeError) return undefined;
    throw err;
  }
}

function toStored(doc: unknown): StoredStrategy {
  const r = validateStrategy(doc);
  return r.ok ? { kind: 'valid', strategy: r.strategy } : { kind: 'invalid', issues: r.issues };
}

/**
 * The strategy a run is evaluated with: the stored document when it is valid and its scope matches
 * the chamber and recipe (defense-rules `resolveStrategy`), else `DEFAULT_STRATEGY`.
 */
export function strategyForRun(
  stored: StoredStrategy,
  run: { readonly chamber: string; readonly recipe: string },
): DefenseStrategy {
  return stored.kind === 'valid' ? resolveStrategy([stored.strategy], run) : DEFAULT_STRATEGY;
}

/**
 * Runs of history any run of the chamber may need: `requiredHistoryRuns` of the stored strategy, and
 * of `DEFAULT_STRATEGY` when that may apply instead (no valid document, or a scoped one found under
 * no known scope). A document found under a scope of the run's lookup order (`keyed`) judges the run
 * itself, or (its own scope disagreeing with the key) the run is dead-lettered: its own need counts.
 */
export function requiredRuns(stored: StoredStrategy, keyed = false): number {
  if (stored.kind !== 'valid') return requiredHistoryRuns(DEFAULT_STRATEGY);
  const own = requiredHistoryRuns(stored.strategy);
  const { chamber, recipe } = stored.strategy.scope;
  return keyed || (chamber === undefined && recipe === undefined) ? own : Math.max(own, requiredHistoryRuns(DEFAULT_STRATEGY));
}

/**
 * Why a valid document cannot judge the runs its scope key is looked up for: where its own scope
 * disagrees with the key (contracts `strategyScopeConflicts`); empty when it agrees.
 */
export function scopeIssues(stored: StoredStrategy, strategyScope: StrategyScopeInfo | undefined): StrategyIssue[] {
  if (stored.kind !== 'valid' || strategyScope === undefined) return [];
  return strategyScopeConflicts(stored.strategy.scope, strategyScope);
}

/**
 * Runs of history a run of the chamber needs in its steady state (defense-rules `steadyHistoryRuns`),
 * for the same strategies as {@link requiredRuns}: the history read first; an evaluation that needs
 * more (Phase I, the monitor's extension, a chart reaching further back) asks for {@link requiredRuns}.
 */
export function steadyRuns(stored: StoredStrategy, keyed = false, memory?: ChamberMemory): number {
  const need = (s: DefenseStrategy): number => (memory === undefined ? steadyHistoryRuns(s) : steadyRunsRemembering(s, memory));
  if (stored.kind !== 'valid') return need(DEFAULT_STRATEGY);
  const own = need(stored.strategy);
  const { chamber, recipe } = stored.strategy.scope;
  return keyed || (chamber === undefined && recipe === undefined) ? own : Math.max(own, need(DEFAULT_STRATEGY));
}

/**
 * Runs of history `strategy` reads in the steady state of a chamber that remembers its runs' alarms
 * (`memory`): its charts' windows, and its escalation windows only where the memory does not cover
 * them (0: the run reads no history).
 */
export function steadyRunsRemembering(strategy: DefenseStrategy, memory: ChamberMemory): number {
  const escalation = escalationHistoryRuns(strategy);
  return Math.max(steadyChartRuns(strategy), memoryCovers(memory, escalation) ? 0 : escalation + 1);
}
