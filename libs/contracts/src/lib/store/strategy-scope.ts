import { isValidId, type ChamberRef } from './chamber';
import type { RecordIssue } from './errors';
import { chamber, Issues, optionalText, RECORD_LIMITS, text } from './record-checks';

/** Where a strategy applies; see {@link strategyScope}. */
export type StrategyScopeSpec =
  | { readonly kind: 'default' }
  | { readonly kind: 'recipe'; readonly recipe: string }
  | { readonly kind: 'chamber'; readonly chamber: ChamberRef; readonly recipe?: string };

/**
 * The scope key of a strategy: `default`, `recipe/<recipe>`, `chamber/<tool>:<chamber>` or
 * `chamber/<tool>:<chamber>/recipe/<recipe>`. Which one a run is judged by: {@link strategyScopesForRun}.
 * @throws InvalidRecordError for invalid ids or recipe names.
 */
export function strategyScope(spec: StrategyScopeSpec): string {
  const issues = new Issues();
  let scope: string;
  switch (spec.kind) {
    case 'default':
      scope = 'default';
      break;
    case 'recipe':
      text(issues, 'recipe', spec.recipe, RECORD_LIMITS.label);
      scope = `recipe/${spec.recipe}`;
      break;
    case 'chamber':
      chamber(issues, 'chamber', spec.chamber);
      optionalText(issues, 'recipe', spec.recipe, RECORD_LIMITS.label);
      scope = `chamber/${spec.chamber.toolId}:${spec.chamber.chamberId}${spec.recipe !== undefined ? `/recipe/${spec.recipe}` : ''}`;
      break;
  }
  issues.throwIfAny('strategy scope');
  return scope;
}

/**
 * A strategy scope key and what it restricts: the chamber (`<tool>:<chamber>`) and / or the recipe
 * it applies to; neither for `default`.
 */
export interface StrategyScopeInfo {
  readonly scope: string;
  readonly chamber?: string;
  readonly recipe?: string;
  /**
   * The legacy key `<tool>:<chamber>` (what the chamber worker read before the documented scopes):
   * a deprecated alias of `chamber/<tool>:<chamber>`, read so that strategies stored that way are
   * not silently ignored. Write `chamber/<tool>:<chamber>` instead.
   */
  readonly deprecated: boolean;
}

/**
 * The scopes a run of `chamber` with `recipe` is looked up in, most specific first:
 * `chamber/<tool>:<chamber>/recipe/<recipe>`, `chamber/<tool>:<chamber>`, the deprecated legacy key
 * `<tool>:<chamber>` (an alias of the chamber scope), `recipe/<recipe>`, `default` (without a recipe:
 * the chamber scope, the legacy key and `default`). The first scope that holds a stored strategy
 * judges the run with its newest version, and only that one: a winner whose document is invalid (or
 * whose own scope disagrees with its key, see {@link strategyScopeConflicts}) makes the run fail,
 * never fall through to a less specific scope. No strategy in any scope: the built-in default.
 * @throws InvalidRecordError for invalid ids or an invalid recipe name.
 */
export function strategyScopesForRun(chamber: ChamberRef, recipe?: string): readonly StrategyScopeInfo[] {
  const key = `${chamber.toolId}:${chamber.chamberId}`;
  const chamberScope = strategyScope({ kind: 'chamber', chamber });
  const steps: StrategyScopeInfo[] = [];
  if (recipe !== undefined) steps.push({ scope: strategyScope({ kind: 'chamber', chamber, recipe }), chamber: key, recipe, deprecated: false });
  steps.push({ scope: chamberScope, chamber: key, deprecated: false }, { scope: key, chamber: key, deprecated: true });
  if (recipe !== undefined) steps.push({ scope: strategyScope({ kind: 'recipe', recipe }), recipe, deprecated: false });
  steps.push({ scope: strategyScope({ kind: 'default' }), deprecated: false });
  return steps;
}

/** What kind of scope judged a run: {@link strategyScopeKind}. */
export type StrategyScopeKind = 'chamber_recipe' | 'chamber' | 'legacy_key' | 'recipe' | 'default' | 'builtin';

/**
 * The kind of a scope of a run's lookup order (for metrics and logs): `legacy_key` for the deprecated
 * `<tool>:<chamber>` key, `builtin` when no scope holds a strategy (`undefined`: the built-in default).
 */
export function strategyScopeKind(scope: StrategyScopeInfo | undefined): StrategyScopeKind {
  if (scope === undefined) return 'builtin';
  if (scope.deprecated) return 'legacy_key';
  if (scope.chamber !== undefined) return scope.recipe !== undefined ? 'chamber_recipe' : 'chamber';
  return scope.recipe !== undefined ? 'recipe' : 'default';
}

/**
 * Reads a scope key: one of the documented forms of {@link strategyScope}, or the deprecated legacy
 * key `<tool>:<chamber>`. In `chamber/<tool>:<chamber>/recipe/<recipe>` the recipe starts after the
 * first `/recipe/` (tool and chamber ids of notifications hold no `/`).
 * @throws InvalidRecordError for anything else (empty, too long, control characters, unknown form).
 */
export function parseStrategyScope(scope: string): StrategyScopeInfo {
  const issues = new Issues();
  const info = scopeInfo(issues, 'scope', scope);
  issues.throwIfAny('strategy scope');
  return info as StrategyScopeInfo;
}

function scopeInfo(issues: Issues, path: string, scope: unknown): StrategyScopeInfo | undefined {
  const before = issues.list.length;
  text(issues, path, scope, RECORD_LIMITS.scope);
  if (issues.list.length > before) return undefined;
  const s = scope as string;
  if (s === 'default') return { scope: s, deprecated: false };
  if (s.startsWith('recipe/')) {
    const recipe = s.slice('recipe/'.length);
    if (recipe.length > 0) return { scope: s, recipe, deprecated: false };
  } else if (s.startsWith('chamber/')) {
    const rest = s.slice('chamber/'.length);
    const at = rest.indexOf('/recipe/');
    const key = at < 0 ? rest : rest.slice(0, at);
    const recipe = at < 0 ? undefined : rest.slice(at + '/recipe/'.length);
    if (isChamberKey(key) && recipe !== '') return { scope: s, chamber: key, ...(recipe !== undefined ? { recipe } : {}), deprecated: false };
  } else if (isChamberKey(s)) return { scope: s, chamber: s, deprecated: true };
  issues.add(path, `"${s}" is not a strategy scope (default, recipe/<recipe>, chamber/<tool>:<chamber>[/recipe/<recipe>], or the deprecated <tool>:<chamber>)`);
  return undefined;
}

function isChamberKey(key: string): boolean {
  const parts = key.split(':');
  return parts.length === 2 && isValidId(parts[0]) && isValidId(parts[1]);
}

/**
 * @throws InvalidRecordError unless `scopes` is an array of 1 to `RECORD_LIMITS.strategyScopes`
 * distinct strategy scopes (see {@link parseStrategyScope}); every problem is listed.
 */
export function validateStrategyScopes(scopes: readonly string[]): void {
  const issues = new Issues();
  if (!Array.isArray(scopes)) issues.add('scopes', 'must be an array of strategy scopes');
  else if (scopes.length === 0 || scopes.length > RECORD_LIMITS.strategyScopes) {
    issues.add('scopes', `must hold 1 to ${RECORD_LIMITS.strategyScopes} scopes, got ${scopes.length}`);
  } else {
    const seen = new Set<string>();
    scopes.forEach((s, i) => {
      scopeInfo(issues, `scopes[${i}]`, s);
      if (seen.has(s)) issues.add(`scopes[${i}]`, `duplicate scope "${s}"`);
      seen.add(s);
    });
  }
  issues.throwIfAny('strategy scopes');
}

/**
 * Where a strategy document's own `scope` ({ chamber?, recipe? }) disagrees with the key it is stored
 * under; empty when it agrees. The key decides where a document applies, so a document may repeat
 * what its key restricts (or say nothing), but a field it sets must be one its key sets too, to the
 * same value: a document stored at `chamber/T:C` that names chamber X:Y, or any recipe, or one stored
 * at `recipe/R` that names another recipe or any chamber, disagrees. Such a document is unusable for
 * every run its key is looked up for (judging the run by it, or by the default instead, would both
 * hide the mistake): the worker dead-letters the run (`invalid-strategy`) and `defenderctl strategy
 * put` refuses to store it.
 */
export function strategyScopeConflicts(
  documentScope: { readonly chamber?: string | undefined; readonly recipe?: string | undefined },
  stored: StrategyScopeInfo,
): RecordIssue[] {
  const issues: RecordIssue[] = [];
  for (const field of ['chamber', 'recipe'] as const) {
    const named = documentScope[field];
    const keyed = stored[field];
    if (named === undefined || named === keyed) continue;
    const applies = keyed === undefined ? `which applies to every ${field}` : `for ${field} ${keyed}`;
    issues.push({ path: `scope.${field}`, message: `names ${field} ${named} but it is stored under scope "${stored.scope}", ${applies}` });
  }
  return issues;
}
