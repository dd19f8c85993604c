import type { KV, KvEntry } from '@nats-io/kv';
import { AssignmentMap, InvalidMessageError, isNewerMap, parseAssignmentMap } from '@defender/contracts';
import { DEFAULT_BUCKETS } from './buckets';
import { mapKvError } from './errors';

/** The one key of the `defender-assignments` bucket (design.md section 4). */
export const ASSIGNMENT_MAP_KEY = 'assignment-map';

export interface StoredMap {
  readonly map: AssignmentMap;
  readonly revision: number;
}

/** Callbacks of {@link AssignmentMapBucket.watch}. */
export interface MapWatchHandlers {
  /** A map newer than every one delivered before (see isNewerMap). */
  onMap(stored: StoredMap): void | Promise<void>;
  /** A stored value that is not a valid map, or an older / lower-token one that was ignored. */
  onRejected?(revision: number, reason: string): void;
}

/**
 * The assignment map in `defender-assignments/assignment-map`: written only by compare-and-set on
 * the last revision (the controller passes the revision it read; `null` to create the first map),
 * read and watched by defenders who accept only newer maps.
 */
export class AssignmentMapBucket {
  constructor(
    private readonly kv: KV,
    private readonly bucket: string = DEFAULT_BUCKETS.assignments,
  ) {}

  /**
   * The current map, or null when none was ever published.
   *
   * @throws InvalidMessageError when the stored value is not a valid map.
   */
  async read(): Promise<StoredMap | null> {
    let e: KvEntry | null;
    try {
      e = await this.kv.get(ASSIGNMENT_MAP_KEY);
    } catch (err) {
      throw mapKvError(err, this.bucket, ASSIGNMENT_MAP_KEY);
    }
    if (!e || e.operation !== 'PUT') return null;
    return { map: parseAssignmentMap(e.value), revision: e.revision };
  }

  /** The revision of the key's last operation (0 when never written), even for an unreadable value. */
  async lastRevision(): Promise<number> {
    try {
      return (await this.kv.get(ASSIGNMENT_MAP_KEY))?.revision ?? 0;
    } catch (err) {
      throw mapKvError(err, this.bucket, ASSIGNMENT_MAP_KEY);
    }
  }

  /**
   * Publishes `map` if the key is still at `expectedRevision` (0 or null: it must not exist yet).
   *
   * @returns the new revision.
   * @throws RevisionConflictError when another writer got there first: re-read, re-decide.
   * @throws NatsUnavailableError when NATS does not answer.
   */
  async publish(map: AssignmentMap, expectedRevision: number | null): Promise<number> {
    const data = JSON.stringify(map);
    const expected = expectedRevision ?? 0;
    try {
      return expected === 0
        ? await this.kv.create(ASSIGNMENT_MAP_KEY, data)
        : await this.kv.update(ASSIGNMENT_MAP_KEY, data, expected);
    } catch (err) {
      throw mapKvError(err, this.bucket, ASSIGNMENT_MAP_KEY, expected);
    }
  }

  /**
   * Delivers the current map and every newer one, in order, until `stop()` is called. A value that
   * is invalid, older, or from a lower fencing token is reported to `onRejected` and skipped.
   */
  async watch(handlers: MapWatchHandlers, held?: AssignmentMap): Promise<{ stop(): void; done: Promise<void> }> {
    let iter;
    try {
      iter = await this.kv.watch({ key: ASSIGNMENT_MAP_KEY });
    } catch (err) {
      throw mapKvError(err, this.bucket, ASSIGNMENT_MAP_KEY);
    }
    let latest = held;
    const done = (async () => {
      for await (const e of iter) {
        if (e.operation !== 'PUT') continue;
        let map: AssignmentMap;
        try {
          map = parseAssignmentMap(e.value);
        } catch (err) {
          if (!(err instanceof InvalidMessageError)) throw err;
          handlers.onRejected?.(e.revision, err.message);
          continue;
        }
        if (!isNewerMap(map, latest)) {
          handlers.onRejected?.(
            e.revision,
            `map v${map.version} (token ${map.fencingToken}) is not newer than v${latest?.version} (token ${latest?.fencingToken})`,
          );
          continue;
        }
        latest = map;
        await handlers.onMap({ map, revision: e.revision });
      }
    })();
    return { stop: () => iter.stop(), done };
  }
}
