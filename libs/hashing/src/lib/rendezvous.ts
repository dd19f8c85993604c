import { EmptyRingError, InvalidHashConfigError } from './errors';
import { pairToUnitInterval } from './mix64';
import { type Hash64, xxh64Digest, xxh64Hash64 } from './xxhash64';

/** A rendezvous node: its id and capacity weight (default 1). */
export interface WeightedNode {
  readonly id: string;
  /** Relative capacity, a finite number > 0; a node of weight 2 wins about twice as many keys. */
  readonly weight?: number;
}

/**
 * Weighted rendezvous (highest-random-weight) score of one (key, node) pair, by the logarithmic
 * method: score = -weight / ln(u), where u in (0, 1) is derived from the two xxHash64 values through
 * the fmix64 mixer. Taking the node with the highest score gives each node a share of keys
 * proportional to its weight, and changing one node's membership or weight moves only keys to or
 * from that node.
 *
 * @param weight finite, > 0 (not checked here; {@link RendezvousHasher} validates).
 */
export function rendezvousScore(keyHash: Hash64, nodeHash: Hash64, weight: number): number {
  return -weight / Math.log(pairToUnitInterval(keyHash.hi, keyHash.lo, nodeHash.hi, nodeHash.lo));
}

/**
 * Weighted rendezvous hashing over a set of nodes (the rendez seed's desired-owner function).
 * Node hashes are cached by id, so {@link setNodes} after a topology change hashes only new ids;
 * a lookup costs one native xxHash64 call for the key plus a few integer multiplies per node.
 * Equal scores (vanishingly rare) go to the smaller id, so the owner is a pure function of
 * (key, node set, weights).
 */
export class RendezvousHasher {
  private readonly hashCache = new Map<string, Hash64>();
  private ids: string[] = [];
  private his = new Uint32Array(0);
  private los = new Uint32Array(0);
  private weights = new Float64Array(0);

  /**
   * @throws InvalidHashConfigError on an empty or duplicate id, or a weight that is not finite and > 0.
   */
  constructor(nodes: readonly WeightedNode[] = []) {
    this.setNodes(nodes);
  }

  /** Current node ids, sorted. */
  get nodes(): readonly string[] {
    return this.ids;
  }

  /**
   * Replaces the node set (and weights). The hasher is left unchanged when validation fails.
   * @throws InvalidHashConfigError on an empty or duplicate id, or a weight that is not finite and > 0.
   */
  setNodes(nodes: readonly WeightedNode[]): void {
    const sorted = [...nodes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (let i = 0; i < sorted.length; i++) {
      const n = sorted[i];
      if (n.id === '') throw new InvalidHashConfigError('node id must not be empty');
      if (i > 0 && n.id === sorted[i - 1].id) throw new InvalidHashConfigError(`duplicate node id: ${n.id}`);
      const w = n.weight ?? 1;
      if (!Number.isFinite(w) || w <= 0) {
        throw new InvalidHashConfigError(`weight of ${n.id} must be finite and > 0, got ${String(w)}`);
      }
    }
    this.ids = sorted.map((n) => n.id);
    this.his = new Uint32Array(sorted.length);
    this.los = new Uint32Array(sorted.length);
    this.weights = Float64Array.from(sorted, (n) => n.weight ?? 1);
    sorted.forEach((n, i) => {
      let h = this.hashCache.get(n.id);
      if (h === undefined) {
        h = xxh64Hash64(n.id);
        this.hashCache.set(n.id, h);
      }
      this.his[i] = h.hi;
      this.los[i] = h.lo;
    });
  }

  /**
   * The node with the highest score for `key`.
   * @throws EmptyRingError when there are no nodes.
   */
  ownerOf(key: string): string {
    const d = xxh64Digest(key);
    return this.ownerOfParts(d.readUInt32BE(0), d.readUInt32BE(4));
  }

  /**
   * The node with the highest score for a precomputed key hash.
   * @throws EmptyRingError when there are no nodes.
   */
  ownerOfHash(keyHash: Hash64): string {
    return this.ownerOfParts(keyHash.hi >>> 0, keyHash.lo >>> 0);
  }

  /** All nodes by descending score for `key` (the fallback order when the first choice is full). */
  rank(key: string): string[] {
    const kh = xxh64Hash64(key);
    const scored = this.ids.map((id, i) => ({ id, s: this.scoreAt(kh.hi, kh.lo, i) }));
    // Array#sort is stable and ids are sorted, so equal scores keep the smaller id first.
    scored.sort((a, b) => b.s - a.s);
    return scored.map((x) => x.id);
  }

  /** Score of `key` on node `id`, or undefined when `id` is not a node. */
  score(key: string, id: string): number | undefined {
    const i = this.ids.indexOf(id);
    if (i < 0) return undefined;
    const kh = xxh64Hash64(key);
    return this.scoreAt(kh.hi, kh.lo, i);
  }

  private scoreAt(hi: number, lo: number, i: number): number {
    return -this.weights[i] / Math.log(pairToUnitInterval(hi, lo, this.his[i], this.los[i]));
  }

  private ownerOfParts(hi: number, lo: number): string {
    if (this.ids.length === 0) throw new EmptyRingError('rendezvous hasher has no nodes');
    let best = 0;
    let bestScore = this.scoreAt(hi, lo, 0);
    for (let i = 1; i < this.ids.length; i++) {
      const s = this.scoreAt(hi, lo, i);
      if (s > bestScore) {
        best = i;
        bestScore = s;
      }
    }
    return this.ids[best];
  }
}
