import { EmptyRingError, InvalidHashConfigError } from './errors';
import { type Hash64, xxh64Digest } from './xxhash64';

/** Virtual nodes per node when none is configured (seed: 150-200, 200 in the examples). */
export const DEFAULT_VNODES = 200;
/** Smallest accepted virtual-node count. */
export const MIN_VNODES = 150;
/** Largest accepted virtual-node count. */
export const MAX_VNODES = 500;

/** Options of a {@link HashRing}. */
export interface HashRingOptions {
  /** Virtual nodes per node, an integer in [{@link MIN_VNODES}, {@link MAX_VNODES}]; default 200. */
  readonly vnodes?: number;
}

/** What {@link HashRing.setNodes} changed. */
export interface RingChange {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Nodes whose points had to be hashed now (not found in the per-node point cache). */
  readonly hashed: readonly string[];
}

/** One node's points, sorted ascending by (hi, lo). */
interface NodePoints {
  readonly hi: Uint32Array;
  readonly lo: Uint32Array;
}

/** A sorted run of ring points; `owner` indexes {@link HashRing} `idOf`. */
interface Run {
  hi: Uint32Array;
  lo: Uint32Array;
  owner: Int32Array;
}

const EMPTY_RUN: Run = { hi: new Uint32Array(0), lo: new Uint32Array(0), owner: new Int32Array(0) };

function cmpId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Consistent-hash ring with virtual nodes, as in the seeds: node `id` owns the points
 * xxHash64(`<id>-vnode-<v>`) for v in 0..vnodes-1 (so `defender-5` owns `defender-5-vnode-0`, ...),
 * and a key belongs to the first point clockwise from xxHash64(key) (binary search, wrapping
 * past the largest point to the smallest).
 *
 * Build cost: hashing is the expensive part (one native call per point, ~0.6 µs), so each node's
 * sorted points are cached by id for the life of the ring, including after the node is removed
 * (a rolling update brings the same ids back). {@link setNodes} re-hashes only ids never seen
 * before and merges sorted runs: O(P) per change for P points, no full re-sort.
 *
 * Ties (two points with the same 64-bit value, probability ~P^2 / 2^65) are ordered by node id, so
 * the ring is a pure function of its node set.
 */
export class HashRing {
  /** Virtual nodes per node. */
  readonly vnodes: number;
  private readonly cache = new Map<string, NodePoints>();
  private readonly indexOf = new Map<string, number>();
  private readonly idOf: string[] = [];
  private members: string[] = [];
  private ring: Run = EMPTY_RUN;

  /**
   * @throws InvalidHashConfigError when `vnodes` is not an integer in [150, 500].
   */
  constructor(options: HashRingOptions = {}) {
    const vnodes = options.vnodes ?? DEFAULT_VNODES;
    if (!Number.isInteger(vnodes) || vnodes < MIN_VNODES || vnodes > MAX_VNODES) {
      throw new InvalidHashConfigError(
        `vnodes must be an integer in [${MIN_VNODES}, ${MAX_VNODES}], got ${String(vnodes)}`,
      );
    }
    this.vnodes = vnodes;
  }

  /** Current node ids, sorted. */
  get nodes(): readonly string[] {
    return this.members;
  }

  /** Number of points on the ring (nodes x vnodes). */
  get size(): number {
    return this.ring.hi.length;
  }

  /**
   * Makes the ring's node set exactly `ids`. Only ids whose points are not cached are hashed.
   * @throws InvalidHashConfigError on an empty id or a duplicate id (the ring is left unchanged).
   */
  setNodes(ids: readonly string[]): RingChange {
    const next = [...ids].sort(cmpId);
    for (let i = 0; i < next.length; i++) {
      if (next[i] === '') throw new InvalidHashConfigError('node id must not be empty');
      if (i > 0 && next[i] === next[i - 1]) throw new InvalidHashConfigError(`duplicate node id: ${next[i]}`);
    }
    const nextSet = new Set(next);
    const currentSet = new Set(this.members);
    const removed = this.members.filter((id) => !nextSet.has(id));
    const added = next.filter((id) => !currentSet.has(id));
    const hashed: string[] = [];

    let ring = this.ring;
    if (removed.length > 0) {
      const gone = new Set(removed.map((id) => this.indexOf.get(id) as number));
      ring = filterRun(ring, (owner) => !gone.has(owner));
    }
    if (added.length > 0) {
      const runs = added.map((id) => {
        if (!this.cache.has(id)) hashed.push(id);
        return this.runOf(id);
      });
      ring = this.merge(ring, this.mergeAll(runs));
    }
    this.ring = ring;
    this.members = next;
    return { added, removed, hashed };
  }

  /** Adds one node (no-op if present). See {@link setNodes}. */
  addNode(id: string): RingChange {
    return this.setNodes(this.members.includes(id) ? this.members : [...this.members, id]);
  }

  /** Removes one node (no-op if absent). See {@link setNodes}. */
  removeNode(id: string): RingChange {
    return this.setNodes(this.members.filter((m) => m !== id));
  }

  /**
   * Owner of a 64-bit position: the node of the first point >= `hash`, wrapping to the first point.
   * @throws EmptyRingError when the ring has no nodes.
   */
  ownerOf(hash: Hash64): string {
    return this.idOf[this.ring.owner[this.pointIndex(hash.hi >>> 0, hash.lo >>> 0)]];
  }

  /**
   * Owner of `key` (hashed with xxHash64, UTF-8).
   * @throws EmptyRingError when the ring has no nodes.
   */
  ownerOfKey(key: string): string {
    const d = xxh64Digest(key);
    return this.idOf[this.ring.owner[this.pointIndex(d.readUInt32BE(0), d.readUInt32BE(4))]];
  }

  /** The ring's points in order, for inspection and tests: `[hash, owner]` pairs. */
  points(): Array<{ hash: Hash64; owner: string }> {
    const out: Array<{ hash: Hash64; owner: string }> = [];
    for (let i = 0; i < this.ring.hi.length; i++) {
      out.push({ hash: { hi: this.ring.hi[i], lo: this.ring.lo[i] }, owner: this.idOf[this.ring.owner[i]] });
    }
    return out;
  }

  /** Index of the first point >= (hi, lo), or 0 when every point is smaller (wrap-around). */
  private pointIndex(hi: number, lo: number): number {
    const { hi: H, lo: L } = this.ring;
    const n = H.length;
    if (n === 0) throw new EmptyRingError('hash ring has no nodes');
    let a = 0;
    let b = n;
    while (a < b) {
      const m = (a + b) >>> 1;
      const mh = H[m];
      if (mh < hi || (mh === hi && L[m] < lo)) a = m + 1;
      else b = m;
    }
    return a === n ? 0 : a;
  }

  private runOf(id: string): Run {
    let pts = this.cache.get(id);
    if (pts === undefined) {
      pts = hashPoints(id, this.vnodes);
      this.cache.set(id, pts);
    }
    let idx = this.indexOf.get(id);
    if (idx === undefined) {
      idx = this.idOf.length;
      this.idOf.push(id);
      this.indexOf.set(id, idx);
    }
    return { hi: pts.hi, lo: pts.lo, owner: new Int32Array(pts.hi.length).fill(idx) };
  }

  /** Merges many sorted runs pairwise (a merge tree): O(P log k). */
  private mergeAll(runs: Run[]): Run {
    let level = runs;
    while (level.length > 1) {
      const next: Run[] = [];
      for (let i = 0; i < level.length; i += 2) {
        next.push(i + 1 < level.length ? this.merge(level[i], level[i + 1]) : level[i]);
      }
      level = next;
    }
    return level[0] ?? EMPTY_RUN;
  }

  private merge(a: Run, b: Run): Run {
    if (a.hi.length === 0) return b;
    if (b.hi.length === 0) return a;
    const n = a.hi.length + b.hi.length;
    const out: Run = { hi: new Uint32Array(n), lo: new Uint32Array(n), owner: new Int32Array(n) };
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < a.hi.length && j < b.hi.length) {
      const ah = a.hi[i];
      const bh = b.hi[j];
      let takeA: boolean;
      if (ah !== bh) takeA = ah < bh;
      else if (a.lo[i] !== b.lo[j]) takeA = a.lo[i] < b.lo[j];
      else takeA = cmpId(this.idOf[a.owner[i]], this.idOf[b.owner[j]]) <= 0;
      if (takeA) {
        out.hi[k] = ah;
        out.lo[k] = a.lo[i];
        out.owner[k++] = a.owner[i++];
      } else {
        out.hi[k] = bh;
        out.lo[k] = b.lo[j];
        out.owner[k++] = b.owner[j++];
      }
    }
    for (; i < a.hi.length; i++, k++) {
      out.hi[k] = a.hi[i];
      out.lo[k] = a.lo[i];
      out.owner[k] = a.owner[i];
    }
    for (; j < b.hi.length; j++, k++) {
      out.hi[k] = b.hi[j];
      out.lo[k] = b.lo[j];
      out.owner[k] = b.owner[j];
    }
    return out;
  }
}

function hashPoints(id: string, vnodes: number): NodePoints {
  const hi = new Uint32Array(vnodes);
  const lo = new Uint32Array(vnodes);
  for (let v = 0; v < vnodes; v++) {
    const d = xxh64Digest(`${id}-vnode-${v}`);
    hi[v] = d.readUInt32BE(0);
    lo[v] = d.readUInt32BE(4);
  }
  // Sort the vnode indexes by hash; equal hashes keep vnode order (stable sort), so this is
  // deterministic.
  const order = Array.from({ length: vnodes }, (_, v) => v).sort((a, b) =>
    hi[a] !== hi[b] ? hi[a] - hi[b] : lo[a] - lo[b],
  );
  return { hi: Uint32Array.from(order, (v) => hi[v]), lo: Uint32Array.from(order, (v) => lo[v]) };
}

function filterRun(run: Run, keep: (owner: number) => boolean): Run {
  let n = 0;
  for (let i = 0; i < run.owner.length; i++) if (keep(run.owner[i])) n++;
  const out: Run = { hi: new Uint32Array(n), lo: new Uint32Array(n), owner: new Int32Array(n) };
  let k = 0;
  for (let i = 0; i < run.owner.length; i++) {
    if (!keep(run.owner[i])) continue;
    out.hi[k] = run.hi[i];
    out.lo[k] = run.lo[i];
    out.owner[k++] = run.owner[i];
  }
  return out;
}
