import { InvalidRecordError, strategyScopesForRun, type ChamberRef, type StrategyRecord, type StrategyScopeInfo } from '@defender/contracts';
import type { PipelineObserver, PipelineStore } from '../ports';
import { DeadLetterSignal, type OutageRetry } from './attempt-policy';

/** The stored strategy that judges a run, and the scope of the run's lookup order it was found under. */
export interface RunStrategy {
  readonly record: StrategyRecord;
  readonly scope: StrategyScopeInfo;
}

/**
 * The strategy that judges a run of `recipe` in the chamber: the newest version in the first scope of
 * the run's lookup order (contracts `strategyScopesForRun`) that holds one, read in one store call;
 * undefined when no scope does (the built-in default). Only the winner counts: if its document is
 * invalid, or its own scope disagrees with its key, the evaluator refuses it and the run is
 * dead-lettered (`invalid-strategy`), never judged by a less specific scope or the default.
 * `runId` names the run (or event) a recipe that builds no scope is dead-lettered as.
 */
export async function strategyFor(
  ctx: { readonly chamber: ChamberRef; readonly key: string },
  deps: { readonly store: Pick<PipelineStore, 'strategies'>; readonly observer?: PipelineObserver },
  retry: OutageRetry,
  recipe: string,
  runId: string,
): Promise<RunStrategy | undefined> {
  let scopes: readonly StrategyScopeInfo[];
  try {
    scopes = strategyScopesForRun(ctx.chamber, recipe);
  } catch (err) {
    if (!(err instanceof InvalidRecordError)) throw err;
    throw new DeadLetterSignal('invalid-notification', `no strategy scope can be built for recipe ${JSON.stringify(recipe)}: ${err.message}`, runId);
  }
  const found = await retry('strategy', () => deps.store.strategies.latest(scopes.map((s) => s.scope)));
  const record = found[0];
  if (!record) {
    deps.observer?.strategyFound?.(ctx.key, undefined);
    return undefined;
  }
  const scope = scopes.find((s) => s.scope === record.scope);
  // The store answers for the scopes it was asked; anything else is a broken store, not a strategy.
  if (!scope) throw new Error(`the store returned a strategy of scope "${record.scope}", which was not asked for (${scopes.map((s) => s.scope).join(', ')})`);
  deps.observer?.strategyFound?.(ctx.key, scope);
  return { record, scope };
}
