import type { LoadReport } from '@defender/contracts';
import type { PipelineObserver } from '../ports';
import type { ProcessingLoad, RunEvents } from './ports';

/** What a {@link RunTally} reads of the processing it counts for. */
export interface TallyDeps<S> {
  readonly events: RunEvents<S>;
  /** The load model's measurements: fed with the runs evaluated and applied. */
  readonly load: ProcessingLoad;
  /** Runs in flight now. */
  readonly inflight: () => number;
  /** The history cache's statistics, once it is open. */
  readonly cacheStats: () => S | undefined;
}

/**
 * What the defender keeps count of while its chamber workers run: the runs processed, the run rates
 * and CPU cost for the controller's load model (ADR 0008, {@link ProcessingLoad}), the chambers paused
 * on a recreated stream (ADR 0007) and the chambers already warned about a deprecated strategy key.
 * Its {@link observer} is the workers' observer: it counts, then reports to the app's {@link RunEvents}.
 */
export class RunTally<S> {
  private processed = 0;
  /** Chambers paused on a stream mismatch (ADR 0007), for the gauge's total. */
  private readonly mismatched = new Set<string>();
  /** Chambers whose strategy came from the deprecated `<tool>:<chamber>` key, warned about once. */
  private readonly legacyStrategyWarned = new Set<string>();
  private readonly load: ProcessingLoad;

  constructor(private readonly deps: TallyDeps<S>) {
    this.load = deps.load;
  }

  get processedTotal(): number {
    return this.processed;
  }

  /** The chambers paused on a stream mismatch, sorted. */
  get mismatchedChambers(): string[] {
    return [...this.mismatched].sort();
  }

  /** The heartbeat's load report: closes the measurement interval (call once per heartbeat). */
  loadReport(): LoadReport {
    return this.load.report();
  }

  /** Chambers no longer owned: their run rates are the next owner's to measure. */
  released(chambers: readonly string[]): void {
    this.load.release(chambers);
  }

  /** A chamber that moved away no longer counts as paused here (its new owner reports it). */
  forget(chamber: string): void {
    if (!this.mismatched.delete(chamber)) return;
    this.deps.events.mismatchForgotten(chamber, this.mismatched.size);
  }

  /** The chamber workers' observer. */
  observer(): PipelineObserver {
    const events = this.deps.events;
    return {
      received: () => events.received(this.deps.inflight()),
      processed: (chamber, sequence, ms, outcome) => {
        this.processed++;
        if (outcome === 'applied') this.load.applied(chamber);
        events.processed(chamber, sequence, ms, outcome, this.deps.inflight(), this.deps.cacheStats());
      },
      traceSamples: (_chamber, samples) => this.load.evaluated(samples),
      strategyFound: (chamber, scope) => {
        const warn = scope?.deprecated === true && !this.legacyStrategyWarned.has(chamber);
        if (warn) this.legacyStrategyWarned.add(chamber);
        events.strategyFound(chamber, scope, warn);
      },
      deadLettered: (...a) => events.deadLettered?.(...a),
      failedAttempt: (...a) => events.failedAttempt?.(...a),
      paused: (...a) => events.paused?.(...a),
      releaseFailed: (...a) => events.releaseFailed?.(...a),
      fenced: (...a) => events.fenced?.(...a),
      streamAdopted: (...a) => events.streamAdopted?.(...a),
      streamMismatch: (chamber, info) => {
        this.mismatched.add(chamber);
        events.streamMismatch(chamber, info, this.mismatched.size);
      },
      streamRebased: (chamber, info) => {
        this.mismatched.delete(chamber);
        events.streamRebased(chamber, info, this.mismatched.size);
      },
      published: (...a) => events.published?.(...a),
      stage: (...a) => events.stage?.(...a),
    };
  }
}
