/**
 * What an equipment event does to a chamber's monitor (issue 49, ADR 0019 decision 4): a pure step
 * per recipe state, by the action the recipe's strategy gives the event's kind.
 */
import type { EquipmentEvent, MonitorState } from '@defender/contracts';
import type { EventAction, MonitorConfig } from '@defender/defense-rules';

/**
 * The action `event` takes on `recipe`'s monitor under `cfg`: the strategy's for its kind, for every
 * recipe, or only the recipe the event names (a recipe change always names one).
 */
export function eventActionFor(cfg: Pick<MonitorConfig, 'events'>, event: EquipmentEvent, recipe: string): EventAction {
  if (event.recipe !== undefined && event.recipe !== recipe) return 'none';
  return cfg.events[event.kind];
}

/**
 * `state` after an event with `action`, committed at store sequence `sequence`; undefined when it stays
 * as it is. `reset-memory`: the MEWMA vector back to 0 (a judging state with one). `recentre`: the
 * MEWMA back to 0 and the centre learnt again from the runs after the event (`recentre.runs` 0; a
 * recipe still in Phase I starts its Phase I again after the event, as `rebaseline`). `rebaseline`:
 * Phase I again from the next run, counting only runs after the event, for the next model version
 * (the same version when the recipe was still collecting its first).
 */
export function monitorStateAfterEvent(state: MonitorState, action: EventAction, sequence: number): MonitorState | undefined {
  if (action === 'reset-memory') return state.phase === 'judging' && state.mewma ? { ...state, mewma: state.mewma.map(() => 0) } : undefined;
  if (action === 'recentre' && state.phase === 'judging') {
    // Every indicator's centre is learnt again: the adaptive centre's level offsets start from 0 on it.
    return { ...state, mewma: state.mewma ? state.mewma.map(() => 0) : null, levelOffsets: {}, recentre: { runs: 0, seen: 0 } };
  }
  if (action === 'rebaseline' || action === 'recentre') {
    return { phase: 'collecting', modelVersion: state.phase === 'judging' ? state.modelVersion + 1 : state.modelVersion, runs: 0, since: sequence };
  }
  return undefined;
}
