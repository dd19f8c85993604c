import type { AssignmentMap } from '@defender/contracts';
import { diffOwnership, lowestDefenderId, ownedChambers } from '../ownership';
import type { ChamberWork, MembershipEvents, StoredAssignmentMap } from './ports';

/** What a {@link MapApplier} needs. */
export interface MapApplierDeps {
  /** The processing of chambers; none in a defender without it (tests). */
  readonly work: ChamberWork | null;
  /** This defender's stable ID, once claimed: no map is applied before. */
  readonly defenderId: () => string | undefined;
  /** Whether the membership is stopping: no map is applied any more. */
  readonly stopping: () => boolean;
  /** Monotonic clock, ms (how long an apply took). */
  readonly monotonic: () => number;
  readonly events: Pick<MembershipEvents, 'applied' | 'applyFailed'>;
  /** After each applied map (the lifecycle leaves FOLLOWER). */
  readonly settled: () => void;
  /** An apply failed: owned set and processing may disagree now (the process exits). */
  readonly failed: (err: unknown) => void;
}

/**
 * Applies assignment maps one after the other, in the order they were read: the chambers this
 * defender owns under each, releasing the lost ones (after their in-flight work) before taking the
 * gained ones, so a lost chamber's work is finished (or fenced) before anyone else's.
 */
export class MapApplier {
  private owned: string[] = [];
  private held: AssignmentMap | undefined;
  private applying: Promise<void> = Promise.resolve();

  constructor(private readonly deps: MapApplierDeps) {}

  /** The chambers owned under the last applied map, sorted. */
  get ownedChambers(): readonly string[] {
    return this.owned;
  }

  /** The last applied map. */
  get heldMap(): AssignmentMap | undefined {
    return this.held;
  }

  /** Applies `stored` after every map queued before it; resolves when it is applied (a failure is reported to `failed`). */
  enqueue(stored: StoredAssignmentMap): Promise<void> {
    this.applying = this.applying.then(() => this.apply(stored).catch((err: unknown) => this.deps.failed(err)));
    return this.applying;
  }

  /** Resolves once every map queued so far is applied. */
  idle(): Promise<void> {
    return this.applying;
  }

  private async apply(stored: StoredAssignmentMap): Promise<void> {
    if (this.deps.stopping()) return;
    const id = this.deps.defenderId();
    if (!id) return;
    const started = this.deps.monotonic();
    const work = this.deps.work;
    const next = ownedChambers(stored.map, id);
    const { added, removed } = diffOwnership(this.owned, next);
    try {
      if (removed.length > 0) await work?.release(removed);
      this.owned = this.owned.filter((c) => !removed.includes(c));
      if (added.length > 0) await work?.acquire(added, stored.map.version);
      this.owned = next;
      work?.mapApplied?.(next, stored.map.version);
    } catch (err) {
      this.deps.events.applyFailed(stored.map.version, err);
      throw err;
    }
    this.held = stored.map;
    this.deps.events.applied({
      defenderId: id,
      stored,
      owned: next,
      added: added.length,
      removed: removed.length,
      mapChambers: new Set(Object.keys(stored.map.assignments)),
      // A map read for us alone lists only our chambers: it was read so because we are not the lowest defender.
      lowestDefender: stored.owner === undefined ? lowestDefenderId(stored.map.defenderInfo) : undefined,
      seconds: (this.deps.monotonic() - started) / 1000,
    });
    this.deps.settled();
  }
}
