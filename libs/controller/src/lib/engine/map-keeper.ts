import type { AssignmentResult, ChamberInput } from '@defender/assignment';
import { type AssignmentMap, InvalidMessageError } from '@defender/contracts';
import { buildAssignmentMap } from '@defender/membership';
import { RevisionConflictError, type StoredMap } from '@defender/nats-kv';
import type { EngineDeps, EngineObserver } from './controller-engine';
import type { TermPort } from './ports';

/** Thrown inside the engine's loop when this process must stop acting as leader. */
export class DeposedError extends Error {
  override readonly name = 'DeposedError';
}

/** What a {@link MapKeeper} needs: the engine's map port, wall clock and observer, the term. */
export type MapKeeperDeps = Pick<EngineDeps, 'maps' | 'now'> & {
  readonly term: TermPort;
  readonly controllerId: string;
  /** Throws DeposedError once this process may no longer act as leader. */
  readonly ensureLeader: () => void;
  readonly observer?: Pick<EngineObserver, 'published' | 'error'>;
};

/** What a new map says besides its assignment. */
export interface MapMeta {
  readonly trigger: AssignmentMap['trigger'];
  readonly state: AssignmentMap['state'];
  readonly lifecycle: AssignmentMap['lifecycleState'];
}

/**
 * The map one leader term holds and publishes: the last map read or published with its revision,
 * the highest version seen anywhere, reading it back (a missing or unreadable map handled), taking it
 * over under the term's fencing token, building the next one and publishing it by compare-and-set.
 */
export class MapKeeper {
  private current: StoredMap | null = null;
  private revision = 0;
  /**
   * The highest map version this term has seen: in the bucket, published, or held by a defender
   * (its heartbeat's `mapVersionSeen`). A map bucket NATS lost and created again starts empty:
   * the next map is numbered above all of these, so defenders (who accept only newer maps) take it
   * and owner epochs keep growing (ADR 0007).
   */
  private versionSeen = 0;

  constructor(private readonly deps: MapKeeperDeps) {}

  /** The map held now (read or published by this term). */
  get map(): AssignmentMap | undefined {
    return this.current?.map;
  }

  /** A map version seen somewhere (a defender's heartbeat): the next map is numbered above it. */
  noteVersion(version: number): void {
    if (version > this.versionSeen) this.versionSeen = version;
  }

  async read(): Promise<void> {
    const { maps, observer } = this.deps;
    try {
      const stored = await maps.read();
      if (!stored && this.current) {
        // The map is gone (its bucket lost and created again): keep ours as the base of the next
        // one (sticky), and write it by create, numbered above every version seen.
        observer?.error?.('read the map', new Error(`assignment map missing (bucket recreated?): next map above v${this.versionSeen}`));
        this.current = { map: this.current.map, revision: 0 };
        this.revision = 0;
        return;
      }
      this.current = stored;
      this.revision = this.current?.revision ?? 0;
      this.noteVersion(this.current?.map.version ?? 0);
    } catch (err) {
      if (!(err instanceof InvalidMessageError)) throw err;
      // An unreadable map: start over as in a cold start, but write over it by compare-and-set.
      observer?.error?.('read the map', err);
      this.current = null;
      this.revision = await maps.lastRevision();
    }
  }

  /** @throws DeposedError when the held map was published by a newer term. */
  assertNotSuperseded(): void {
    const held = this.current?.map;
    if (held && BigInt(held.fencingToken) > BigInt(this.deps.term.fencingToken)) {
      throw new DeposedError(`a newer term (token ${held.fencingToken}) already published`);
    }
  }

  /**
   * Re-stamps the held map with this term's token (so a deposed leader's compare-and-set can no
   * longer succeed). True when there was nothing to re-stamp or it was published; false when another
   * writer got there first (read again and retry).
   * @throws DeposedError when a newer term already published.
   */
  async restamp(): Promise<boolean> {
    this.assertNotSuperseded();
    const held = this.current?.map;
    const term = this.deps.term;
    if (!held || held.fencingToken === term.fencingToken) return true;
    const map: AssignmentMap = {
      ...held,
      version: Math.max(held.version, this.versionSeen) + 1,
      timestamp: new Date(this.deps.now()).toISOString(),
      fencingToken: term.fencingToken,
      controllerId: this.deps.controllerId,
      trigger: 'takeover',
      statistics: { ...held.statistics, chambersMoved: 0, movedWeight: 0, movedWeightFraction: 0, floorFraction: 0, calculationDurationMs: 0 },
    };
    return this.publish(map, null, 'takeover');
  }

  /** Publishes by compare-and-set; false when another writer got there first (re-read and re-decide). */
  async publish(map: AssignmentMap, result: AssignmentResult | null, why: string): Promise<boolean> {
    this.deps.ensureLeader();
    try {
      const revision = await this.deps.maps.publish(map, this.revision);
      this.current = { map, revision };
      this.revision = revision;
      this.noteVersion(map.version);
      this.deps.observer?.published?.(map, result, why);
      return true;
    } catch (err) {
      if (!(err instanceof RevisionConflictError)) throw err;
      this.deps.observer?.error?.('publish the map', err);
      await this.read();
      const now = this.current?.map;
      if (now && BigInt(now.fencingToken) > BigInt(this.deps.term.fencingToken)) {
        throw new DeposedError(`a newer term (token ${now.fencingToken}) published`);
      }
      return false;
    }
  }

  /** The next map: `result` over `defenders` and `chambers`, numbered above every version seen. */
  build(result: AssignmentResult, defenders: { id: string; capacity: number }[], chambers: ChamberInput[], now: number, meta: MapMeta): AssignmentMap {
    const prev = this.current?.map;
    return buildAssignmentMap({
      version: Math.max(prev?.version ?? 0, this.versionSeen) + 1,
      now: new Date(now),
      fencingToken: this.deps.term.fencingToken,
      controllerId: this.deps.controllerId,
      trigger: meta.trigger,
      state: meta.state,
      lifecycleState: meta.lifecycle,
      firstAssignmentAt: prev?.firstAssignmentAt ?? new Date(now).toISOString(),
      assignments: result.assignments,
      weights: Object.fromEntries(chambers.map((c) => [c.key, c.weight])),
      defenders,
      lastMovedAt: result.lastMovedAt,
      calculationDurationMs: result.stats.calculationDurationMs,
      movement: {
        chambersMoved: result.stats.chambersMoved,
        movedWeight: result.stats.movedWeight,
        movedWeightFraction: result.stats.movedWeightFraction,
        floorFraction: result.stats.floorFraction,
      },
    });
  }
}
