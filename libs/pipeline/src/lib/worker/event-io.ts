import { eventRunId, type ChamberMemory, type CommitRunResult, type EquipmentEvent, type MonitorState, type MonitorStateRecord } from '@defender/contracts';
import type { PipelineObserver, PipelineStore } from '../ports';
import type { OutageRetry } from './attempt-policy';
import type { RunIOContext } from './run-io';
import { strategyFor, type RunStrategy } from './strategy-lookup';

/** What an {@link EventIO} reads and writes through. */
export interface EventIODeps {
  readonly store: Pick<PipelineStore, 'chamberState' | 'monitorState' | 'chamberMemory' | 'strategies'>;
  readonly observer?: PipelineObserver;
}

/** An equipment event as its commit stores it. */
export interface EventCommit {
  readonly sequence: number;
  readonly event: EquipmentEvent;
  readonly committedAt: Date;
  /** The monitor states the event changes, one per recipe. */
  readonly monitorStates: readonly { readonly recipe: string; readonly state: MonitorState }[];
  /** The chamber's memory, carried past the event unchanged (absent when the mark's commit wrote none). */
  readonly chamberMemory: ChamberMemory | undefined;
}

/**
 * A chamber's equipment-event I/O as its owner (ADR 0019): what an event's step reads (the run id's
 * sequence if it was applied, the recipes' monitor states and strategies, the chamber's memory) and
 * its fenced commit at the event's sequence. Every call goes through `retry`; FencedError passes through.
 */
export class EventIO {
  constructor(
    private readonly ctx: RunIOContext,
    private readonly deps: EventIODeps,
    private readonly retry: OutageRetry,
  ) {}

  /** The sequence the event was applied at, if it was (its run id is `event:<eventId>`). */
  appliedAt(event: EquipmentEvent): Promise<number | undefined> {
    return this.retry('applied', () => this.deps.store.chamberState.appliedRun(this.ctx.chamber, eventRunId(event.eventId)));
  }

  /** Every recipe's monitor state of the chamber. */
  monitorStates(): Promise<MonitorStateRecord[]> {
    return this.retry('monitor state', () => this.deps.store.monitorState.list(this.ctx.chamber));
  }

  /** The strategy that judges `recipe`'s runs (undefined: the default). */
  strategyOf(recipe: string, event: EquipmentEvent): Promise<RunStrategy | undefined> {
    return strategyFor(this.ctx, this.deps, this.retry, recipe, eventRunId(event.eventId));
  }

  /** The chamber's memory if the commit at the mark wrote it (so it stays at the mark after the event). */
  async chamberMemoryAt(highWaterMark: number): Promise<ChamberMemory | undefined> {
    const rec = await this.retry('chamber memory', () => this.deps.store.chamberMemory.get(this.ctx.chamber));
    return rec !== undefined && rec.sequence === highWaterMark ? rec.memory : undefined;
  }

  /** Commits the event at its sequence with the states it changes (fenced; a run id applied before moves only the mark). */
  async commit(c: EventCommit): Promise<CommitRunResult['outcome']> {
    const { chamber, epoch, ownerId } = this.ctx;
    const result = await this.retry('commit', () =>
      this.deps.store.chamberState.commitRun({
        chamber,
        epoch,
        ownerId,
        sequence: c.sequence,
        runId: eventRunId(c.event.eventId),
        committedAt: c.committedAt,
        points: [],
        event: { event: c.event, monitorStates: c.monitorStates },
        ...(c.chamberMemory ? { chamberMemory: c.chamberMemory } : {}),
      }),
    );
    return result.outcome;
  }
}
