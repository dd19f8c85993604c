import { performance } from 'node:perf_hooks';
import type { KV, KvEntry, KvWatchInclude } from '@nats-io/kv';
import { KvWatchInclude as Include } from '@nats-io/kv';
import {
  AssignmentMap,
  AssignmentMapHead,
  InvalidMessageError,
  isNewerMap,
  parseStoredMapHead,
} from '@defender/contracts';
import { DEFAULT_BUCKETS } from './buckets';
import { mapKvError, NatsUnavailableError, RevisionConflictError } from './errors';
import { getFromLeader } from './leader-reads';
import {
  chunksHolding,
  DEFAULT_CHUNK_BYTES,
  decodeMap,
  decodeOwnerChunks,
  encodeMap,
  MAX_MAP_VALUE_BYTES,
} from './map-chunks';

/**
 * The head key of the `defender-assignments` bucket (design.md section 4): the map's summary and
 * where its chunks are (ADR 0009), or a whole map as controllers before ADR 0009 stored it.
 */
export const ASSIGNMENT_MAP_KEY = 'assignment-map';

/** The key of chunk `index` in `slot` (0-3). */
export function assignmentChunkKey(slot: number, index: number): string {
  return `${ASSIGNMENT_MAP_KEY}.${slot}.${index}`;
}

/**
 * The slot a publisher with fencing token `token` writes its chunks to: of its pair (0/1 for even
 * tokens, 2/3 for odd ones, so two consecutive terms never share a slot), the one `currentSlot` (the
 * current head's) is not. A bounded key set: no purge is needed (nobody may purge, permissions.ts).
 */
export function chunkSlotFor(token: string, currentSlot: number | null): number {
  const base = Number(token.at(-1)) % 2 === 0 ? 0 : 2;
  return currentSlot === base ? base + 1 : base;
}

export interface StoredMap {
  readonly map: AssignmentMap;
  /** The revision of the head (the value of ASSIGNMENT_MAP_KEY) this map was published with. */
  readonly revision: number;
  /**
   * Set when the map was read for one defender (a {@link MapScope} named it): `map.assignments` and
   * `map.lastMovedAt` hold only this defender's chambers, every other field is the whole map's.
   */
  readonly owner?: string;
}

/**
 * Which part of a chunked map a reader needs, decided from its head: a defender ID (read only the
 * chunks holding its chambers, ADR 0009) or null (the whole map). A map stored whole by an older
 * controller is always returned whole.
 */
export type MapScope = (head: AssignmentMapHead) => string | null;

/** What one publication wrote: the published-map size and time metrics (issue 27). */
export interface MapPublication {
  readonly revision: number;
  /** Bytes of the head and every chunk. */
  readonly bytes: number;
  readonly headBytes: number;
  readonly chunks: number;
  /** The largest value written (head or chunk); always <= MAX_MAP_VALUE_BYTES. */
  readonly maxValueBytes: number;
  /** From the call to the head's compare-and-set acknowledged (encode, chunk writes, head write). */
  readonly ms: number;
}

export interface AssignmentMapBucketOptions {
  /** Most bytes of one chunk value (default DEFAULT_CHUNK_BYTES, at most MAX_MAP_VALUE_BYTES). */
  readonly chunkBytes?: number;
  /** Called after every successful publication (the controller's size and time metrics). */
  readonly onPublished?: (p: MapPublication) => void;
}

/** Callbacks of {@link AssignmentMapBucket.watch}. */
export interface MapWatchHandlers {
  /** A map newer than every one delivered before (see isNewerMap). */
  onMap(stored: StoredMap): void | Promise<void>;
  /**
   * A stored value that is not a valid map, an older / lower-token one that was ignored, or a head
   * superseded twice before the watcher got to it (its chunks were already replaced).
   */
  onRejected?(revision: number, reason: string): void;
}

/** Re-reads of the head when a newer publication replaced the chunks being read (each means one). */
const MAX_READ_ATTEMPTS = 100;

/**
 * The assignment map in `defender-assignments` (ADR 0009): a small head under ASSIGNMENT_MAP_KEY,
 * written only by compare-and-set on its last revision (the controller passes the revision it read;
 * `null` to create the first map), and the per-chamber entries in chunks written before it into a
 * slot the current head does not use (chunkSlotFor). The head names each chunk's exact revision and
 * digest: a reader reads exactly the bytes the head was published with (a chunk key rewritten since
 * still holds them while the bucket's history keeps them), so it never returns a map mixed from two
 * publications. Defenders read and watch it and accept only newer maps. A whole map stored by an
 * older controller is still read.
 */
export class AssignmentMapBucket {
  private readonly chunkBytes: number;

  constructor(
    private readonly kv: KV,
    private readonly bucket: string = DEFAULT_BUCKETS.assignments,
    private readonly opts: AssignmentMapBucketOptions = {},
  ) {
    this.chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    if (!(this.chunkBytes >= 1024 && this.chunkBytes <= MAX_MAP_VALUE_BYTES)) {
      throw new RangeError(
        `chunkBytes must be between 1024 and ${MAX_MAP_VALUE_BYTES}, got ${this.chunkBytes}`,
      );
    }
  }

  /**
   * The current map, or null when none was ever published; with `scope`, only what it names.
   *
   * @throws InvalidMessageError when the stored value is not a valid map (or its chunks are gone
   *   while it is still the current head).
   */
  async read(scope?: MapScope): Promise<StoredMap | null> {
    return (await this.readMeasured(scope)).stored;
  }

  /** {@link read}, with the bytes of the stored values it read for the map it returns (head and chunks). */
  async readMeasured(scope?: MapScope): Promise<{ stored: StoredMap | null; bytes: number }> {
    for (let attempt = 1; ; attempt++) {
      const e = await this.getHead();
      if (!e || e.operation !== 'PUT') return { stored: null, bytes: e?.value.length ?? 0 };
      const read = await this.resolve(e, scope);
      if (read) return read;
      // Its chunks were replaced: a newer head was published meanwhile (read that), or none was and this head is broken.
      if ((await this.lastRevision()) === e.revision) {
        throw new InvalidMessageError(
          'assignment map',
          `head revision ${e.revision}: a chunk is no longer stored`,
        );
      }
      if (attempt >= MAX_READ_ATTEMPTS) {
        throw new NatsUnavailableError(
          `${this.bucket}/${ASSIGNMENT_MAP_KEY}: overtaken by ${attempt} publications while reading; retry`,
        );
      }
    }
  }

  /** The revision of the key's last operation (0 when never written), even for an unreadable value. */
  async lastRevision(): Promise<number> {
    return (await this.getHead())?.revision ?? 0;
  }

  /**
   * Publishes `map` if the head is still at `expectedRevision` (0 or null: it must not exist yet).
   *
   * @returns the new revision.
   * @throws RevisionConflictError when another writer got there first: re-read, re-decide.
   * @throws NatsUnavailableError when NATS does not answer.
   * @throws RangeError when a value would exceed MAX_MAP_VALUE_BYTES (nothing is published).
   */
  async publish(map: AssignmentMap, expectedRevision: number | null): Promise<number> {
    return (await this.publishMeasured(map, expectedRevision)).revision;
  }

  /** {@link publish}, returning what it wrote and how long it took. */
  async publishMeasured(map: AssignmentMap, expectedRevision: number | null): Promise<MapPublication> {
    const t0 = performance.now();
    const expected = expectedRevision ?? 0;
    const current = await this.getHead();
    if (current?.operation === 'PUT' && current.revision !== expected) {
      throw new RevisionConflictError(this.bucket, ASSIGNMENT_MAP_KEY, expected);
    }
    const previous = current?.operation === 'PUT' ? this.headOf(current) : null;
    const slot = chunkSlotFor(map.fencingToken, previous?.chunks.slot ?? null);
    const encoded = encodeMap(map, this.chunkBytes);
    const headOf = (revisions: number[]): string =>
      JSON.stringify({ ...encoded.head, chunks: { slot, revisions, ...encoded.head.chunks } });
    const headBound = Buffer.byteLength(headOf(encoded.chunks.map(() => Number.MAX_SAFE_INTEGER)));
    if (headBound > MAX_MAP_VALUE_BYTES) {
      throw new RangeError(
        `map v${map.version}: head would be ${headBound} bytes (${map.defenderCount} defenders), over ${MAX_MAP_VALUE_BYTES}`,
      );
    }
    let revisions: number[];
    try {
      revisions = await Promise.all(
        encoded.chunks.map((c, i) => this.kv.put(assignmentChunkKey(slot, i), c)),
      );
    } catch (err) {
      throw mapKvError(err, this.bucket, assignmentChunkKey(slot, 0));
    }
    const head = headOf(revisions);
    let revision: number;
    try {
      revision =
        expected === 0
          ? await this.kv.create(ASSIGNMENT_MAP_KEY, head)
          : await this.kv.update(ASSIGNMENT_MAP_KEY, head, expected);
    } catch (err) {
      throw mapKvError(err, this.bucket, ASSIGNMENT_MAP_KEY, expected);
    }
    const ms = performance.now() - t0;
    const chunkBytes = encoded.chunks.map((c) => Buffer.byteLength(c));
    const headBytes = Buffer.byteLength(head);
    const p: MapPublication = {
      revision,
      headBytes,
      bytes: headBytes + chunkBytes.reduce((a, b) => a + b, 0),
      chunks: encoded.chunks.length,
      maxValueBytes: Math.max(headBytes, ...chunkBytes),
      ms,
    };
    this.opts.onPublished?.(p);
    return p;
  }

  /**
   * The bucket's identity: its stream's creation time as the server reports it. A bucket created
   * again (NATS lost its store) has a new one, and its revisions restart at 1: a watch that started
   * on the old one (an ordered consumer) would wait past every new map (ADR 0007).
   * @throws NatsUnavailableError / StreamMissingError like the other reads.
   */
  async identity(): Promise<string> {
    try {
      return (await this.kv.status()).streamInfo.created;
    } catch (err) {
      throw mapKvError(err, this.bucket, ASSIGNMENT_MAP_KEY);
    }
  }

  /**
   * Delivers the current map and every newer one, in order, until `stop()` is called. A value that
   * is invalid, older, or from a lower fencing token is reported to `onRejected` and skipped. With
   * `scope`, each map is read as far as it names (a defender reads only its own chunks).
   */
  async watch(
    handlers: MapWatchHandlers,
    held?: Pick<AssignmentMap, 'version' | 'fencingToken'>,
    scope?: MapScope,
  ): Promise<{ stop(): void; done: Promise<void> }> {
    let latest = held;
    return this.watchHeads(Include.LastValue, scope, {
      onMap: async (stored) => {
        const map = stored.map;
        if (!isNewerMap(map, latest)) {
          handlers.onRejected?.(
            stored.revision,
            `map v${map.version} (token ${map.fencingToken}) is not newer than v${latest?.version} (token ${latest?.fencingToken})`,
          );
          return;
        }
        latest = map;
        await handlers.onMap(stored);
      },
      onRejected: handlers.onRejected,
    });
  }

  /**
   * Every published map that can still be read, in revision order, whether newer or not (observers:
   * the dashboard, chaos and e2e recorders); with `history`, the kept history first.
   */
  async watchPublications(
    handlers: MapWatchHandlers,
    opts: { history?: boolean } = {},
  ): Promise<{ stop(): void; done: Promise<void> }> {
    return this.watchHeads(opts.history ? Include.AllHistory : Include.LastValue, undefined, handlers);
  }

  /** Every kept map version that can still be read (oldest revision first); unreadable ones skipped. */
  async history(): Promise<StoredMap[]> {
    const out: StoredMap[] = [];
    let iter;
    try {
      iter = await this.kv.history({ key: ASSIGNMENT_MAP_KEY });
    } catch (err) {
      throw mapKvError(err, this.bucket, ASSIGNMENT_MAP_KEY);
    }
    for await (const e of iter) {
      if (e.operation !== 'PUT') continue;
      try {
        const map = await this.resolveEntry(e);
        if (map) out.push({ map, revision: e.revision });
      } catch (err) {
        if (!(err instanceof InvalidMessageError)) throw err;
      }
    }
    return out.sort((a, b) => a.revision - b.revision);
  }

  /**
   * The map a stored head entry (a PUT of ASSIGNMENT_MAP_KEY) describes, its chunks read by their
   * exact revisions; null when a chunk is no longer stored (a newer publication replaced it).
   *
   * @throws InvalidMessageError when the entry or a chunk is not valid, or they do not belong together.
   */
  async resolveEntry(e: Pick<KvEntry, 'value' | 'revision'>): Promise<AssignmentMap | null> {
    return (await this.resolve(e))?.stored.map ?? null;
  }

  /** {@link resolveEntry} as far as `scope` names, with the bytes read (head and chunks). */
  private async resolve(
    e: Pick<KvEntry, 'value' | 'revision'>,
    scope?: MapScope,
  ): Promise<{ stored: StoredMap; bytes: number } | null> {
    const parsed = parseStoredMapHead(e.value);
    if (parsed.kind === 'whole') return { stored: { map: parsed.map, revision: e.revision }, bytes: e.value.length };
    const { head } = parsed;
    const owner = scope?.(head) ?? null;
    const indexes = owner === null ? head.chunks.revisions.map((_, i) => i) : chunksHolding(head, owner);
    let values: (Uint8Array | null)[];
    try {
      values = await Promise.all(
        indexes.map(async (i) => {
          const revision = head.chunks.revisions[i] as number;
          // From the leader: a replica may not hold this revision yet (leader-reads.ts).
          const c = await getFromLeader(this.kv, assignmentChunkKey(head.chunks.slot, i), { revision });
          return c && c.operation === 'PUT' && c.revision === revision ? c.value : null;
        }),
      );
    } catch (err) {
      throw mapKvError(err, this.bucket, assignmentChunkKey(head.chunks.slot, indexes[0] ?? 0));
    }
    const read: Uint8Array[] = [];
    for (const v of values) {
      if (v === null) return null;
      read.push(v);
    }
    const bytes = e.value.length + read.reduce((n, v) => n + v.length, 0);
    if (owner === null) return { stored: { map: decodeMap(head, read), revision: e.revision }, bytes };
    const map = decodeOwnerChunks(head, owner, read.map((value, k) => ({ index: indexes[k] as number, value })));
    return { stored: { map, revision: e.revision, owner }, bytes };
  }

  private async getHead(): Promise<KvEntry | null> {
    try {
      return await getFromLeader(this.kv, ASSIGNMENT_MAP_KEY);
    } catch (err) {
      throw mapKvError(err, this.bucket, ASSIGNMENT_MAP_KEY);
    }
  }

  /** The chunked head of a stored entry; null for a whole (legacy) or unreadable value. */
  private headOf(e: KvEntry): AssignmentMapHead | null {
    try {
      const s = parseStoredMapHead(e.value);
      return s.kind === 'chunked' ? s.head : null;
    } catch (err) {
      if (err instanceof InvalidMessageError) return null;
      throw err;
    }
  }

  private async watchHeads(
    include: KvWatchInclude,
    scope: MapScope | undefined,
    handlers: MapWatchHandlers,
  ): Promise<{ stop(): void; done: Promise<void> }> {
    let iter;
    try {
      iter = await this.kv.watch({ key: ASSIGNMENT_MAP_KEY, include });
    } catch (err) {
      throw mapKvError(err, this.bucket, ASSIGNMENT_MAP_KEY);
    }
    const done = (async () => {
      for await (const e of iter) {
        if (e.operation !== 'PUT') continue;
        let stored: StoredMap | undefined;
        try {
          stored = (await this.resolve(e, scope))?.stored;
        } catch (err) {
          if (!(err instanceof InvalidMessageError)) throw err;
          handlers.onRejected?.(e.revision, err.message);
          continue;
        }
        if (!stored) {
          handlers.onRejected?.(
            e.revision,
            'superseded: its chunks were replaced by newer publications before the watcher read them',
          );
          continue;
        }
        await handlers.onMap(stored);
      }
    })();
    return { stop: () => iter.stop(), done };
  }
}
