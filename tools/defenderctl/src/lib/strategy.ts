/**
 * `defenderctl strategy put|show`: operators store defense strategies under their documented scopes
 * and see which one judges a chamber's runs (the lookup order of contracts `strategyScopesForRun`).
 */
import { readFile, stat } from 'node:fs/promises';
import {
  InvalidRecordError,
  isJsonObject,
  parseChamberKey,
  parseStrategyScope,
  RECORD_LIMITS,
  strategyScopeConflicts,
  strategyScopesForRun,
  VersionConflictError,
  type DefenderStore,
  type JsonObject,
  type RecordIssue,
  type StrategyRecord,
  type StrategyScopeInfo,
} from '@defender/contracts';
import { validateStrategy } from '@defender/defense-rules';
import { CtlError } from './commands';

/** What `strategy put` stored. */
export interface StrategyPutResult {
  readonly scope: string;
  readonly version: number;
  readonly name: string;
  readonly author: string;
  readonly createdAt: string;
}

/** Every problem that makes a document unusable under `scope` (schema, then scope conflicts); empty when usable. */
export function strategyProblems(document: unknown, scope: StrategyScopeInfo): RecordIssue[] {
  const r = validateStrategy(document);
  if (!r.ok) return [...r.issues];
  return strategyScopeConflicts(r.strategy.scope, scope);
}

function issueLines(issues: readonly RecordIssue[]): string {
  return issues.map((i) => `  ${i.path ? `${i.path}: ` : ''}${i.message}`).join('\n');
}

/**
 * Reads a strategy document from `file`: at most `RECORD_LIMITS.jsonBytes` bytes (checked before
 * reading), JSON, a plain object.
 * @throws CtlError naming the file and what is wrong with it.
 */
export async function readStrategyFile(file: string): Promise<JsonObject> {
  let size;
  try {
    size = (await stat(file)).size;
  } catch (err) {
    throw new CtlError(`cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (size > RECORD_LIMITS.jsonBytes) throw new CtlError(`${file} is ${size} bytes; a strategy document may be at most ${RECORD_LIMITS.jsonBytes} (nothing stored)`);
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new CtlError(`${file} is not JSON: ${(err as Error).message} (nothing stored)`, { cause: err });
  }
  if (!isJsonObject(doc)) throw new CtlError(`${file} must hold a JSON object (a defense strategy document; nothing stored)`);
  return doc;
}

/**
 * Stores `document` as the next version of `scope` (one of the documented scopes; the deprecated
 * legacy key `<tool>:<chamber>` is refused: write `chamber/<tool>:<chamber>`). The document is
 * validated first with the defense-rules schema and against its scope key (contracts
 * `strategyScopeConflicts`); an invalid one is refused with every issue listed and nothing stored.
 * The document is stored as given (defaults are applied when it is read). A version written by
 * someone else at the same time is retried at the next version.
 * @throws CtlError for a bad scope or document (nothing stored).
 */
export async function putStrategy(
  store: DefenderStore,
  request: { readonly scope: string; readonly document: JsonObject; readonly author: string; readonly source?: string },
  now: Date,
): Promise<StrategyPutResult> {
  let scope: StrategyScopeInfo;
  try {
    scope = parseStrategyScope(request.scope);
  } catch (err) {
    if (!(err instanceof InvalidRecordError)) throw err;
    throw new CtlError(`${err.issues.map((i) => i.message).join('; ')} (nothing stored)`, { cause: err });
  }
  if (scope.deprecated) {
    throw new CtlError(`"${scope.scope}" is the deprecated legacy key: store the strategy under chamber/${scope.scope} (nothing stored)`);
  }
  const serialized = JSON.stringify(request.document).length;
  const issues: RecordIssue[] =
    serialized > RECORD_LIMITS.jsonBytes
      ? [{ path: '', message: `serializes to ${serialized} characters; at most ${RECORD_LIMITS.jsonBytes}` }]
      : strategyProblems(request.document, scope);
  if (issues.length > 0) {
    throw new CtlError(`strategy document${request.source ? ` ${request.source}` : ''} is invalid for scope ${scope.scope} (nothing stored):\n${issueLines(issues)}`);
  }
  if (request.author.length > RECORD_LIMITS.ownerId) throw new CtlError(`--author may be at most ${RECORD_LIMITS.ownerId} characters (nothing stored)`);
  for (let tries = 0; ; tries++) {
    const versions = await store.strategies.versions(scope.scope);
    const record: StrategyRecord = { scope: scope.scope, version: (versions.at(-1) ?? 0) + 1, document: request.document, createdAt: now, author: request.author };
    try {
      await store.strategies.put(record);
    } catch (err) {
      if (err instanceof VersionConflictError && tries < 5) continue;
      if (err instanceof InvalidRecordError) throw new CtlError(`the store refuses the strategy (nothing stored):\n${issueLines(err.issues)}`, { cause: err });
      throw err;
    }
    return { scope: record.scope, version: record.version, name: String(request.document['name'] ?? ''), author: record.author, createdAt: now.toISOString() };
  }
}

/** One scope of a run's lookup order, and what it holds. */
export interface StrategyScopeRow {
  readonly scope: string;
  readonly deprecated: boolean;
  /** Its newest version, or null when it holds none. */
  readonly version: number | null;
  readonly name: string | null;
  readonly author: string | null;
  readonly createdAt: string | null;
}

/** `strategy show`: the lookup order of a chamber's runs (of one recipe) and which scope wins. */
export interface StrategyShowView {
  readonly chamber: string;
  readonly recipe: string | null;
  /** Most specific first (contracts `strategyScopesForRun`). */
  readonly lookup: readonly StrategyScopeRow[];
  /** The scope whose newest version judges the runs, or null: the built-in default strategy. */
  readonly winner: { readonly scope: string; readonly version: number } | null;
  /** Why the winner cannot judge a run (its runs are dead-lettered `invalid-strategy`); empty when it can. */
  readonly winnerProblems: readonly RecordIssue[];
}

/**
 * The lookup order for runs of `key` (with `recipe`: its recipe scopes too), the newest version
 * each scope holds (one store read), the winner, and whether the winner is usable.
 * @throws CtlError for a bad chamber key or recipe.
 */
export async function showStrategy(store: DefenderStore, key: string, recipe?: string): Promise<StrategyShowView> {
  let scopes: readonly StrategyScopeInfo[];
  try {
    scopes = strategyScopesForRun(parseChamberKey(key), recipe);
  } catch (err) {
    throw new CtlError(`"${key}"${recipe !== undefined ? ` with recipe "${recipe}"` : ''} names no chamber runs: ${(err as Error).message}`, { cause: err });
  }
  const found = new Map((await store.strategies.latest(scopes.map((s) => s.scope))).map((r) => [r.scope, r]));
  const lookup = scopes.map((s): StrategyScopeRow => {
    const r = found.get(s.scope);
    const name = r?.document['name'];
    return {
      scope: s.scope,
      deprecated: s.deprecated,
      version: r?.version ?? null,
      name: typeof name === 'string' ? name : null,
      author: r?.author ?? null,
      createdAt: r?.createdAt.toISOString() ?? null,
    };
  });
  const winnerScope = scopes.find((s) => found.has(s.scope));
  const winner = winnerScope ? found.get(winnerScope.scope) : undefined;
  return {
    chamber: key,
    recipe: recipe ?? null,
    lookup,
    winner: winner ? { scope: winner.scope, version: winner.version } : null,
    winnerProblems: winner && winnerScope ? strategyProblems(winner.document, winnerScope) : [],
  };
}

/** `strategy show` as text: the order, what each scope holds, the winner and what is wrong with it. */
export function formatStrategyShow(v: StrategyShowView): string {
  const runs = `runs of ${v.chamber}${v.recipe !== null ? ` with recipe ${v.recipe}` : ''}`;
  const head = v.winner
    ? `${runs} are judged by ${v.winner.scope} v${v.winner.version}`
    : `${runs} are judged by the built-in default strategy (no strategy stored in any of these scopes)`;
  const width = Math.max(...v.lookup.map((r) => r.scope.length + (r.deprecated ? 13 : 0)));
  const rows = v.lookup.map((r, i) => {
    const label = `${r.scope}${r.deprecated ? ' (deprecated)' : ''}`.padEnd(width);
    const held = r.version === null ? '-' : `v${r.version}${r.name !== null ? ` "${r.name}"` : ''} by ${r.author || '?'} at ${r.createdAt}`;
    const mark = v.winner?.scope === r.scope ? '  <- wins' : r.version !== null && v.winner ? '  (not used: a more specific scope wins)' : '';
    return `  ${i + 1}. ${label}  ${held}${mark}`;
  });
  const legacy = v.lookup.find((r) => r.deprecated && r.version !== null);
  return [
    head,
    'lookup order, most specific first:',
    ...rows,
    ...(v.recipe === null ? ['(pass --recipe R to include the recipe scopes)'] : []),
    ...(legacy ? [`note: ${legacy.scope} is the deprecated legacy key; store its strategy under chamber/${legacy.scope} (defenderctl strategy put --scope chamber/${legacy.scope})`] : []),
    ...(v.winnerProblems.length > 0
      ? [`PROBLEM: the winning strategy cannot judge a run; these runs are dead-lettered invalid-strategy until a valid version is stored:`, issueLines(v.winnerProblems)]
      : []),
  ].join('\n');
}
