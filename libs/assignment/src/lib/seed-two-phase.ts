import { HashRing, xxh64Digest } from '@defender/hashing';
import { type Placement, REASON_ORPHANED, REASON_REBALANCE } from './placement';
import { ORPHAN, type Problem } from './problem';

/** Options the seed baseline reads. */
export interface SeedTwoPhaseOptions {
  readonly vnodes?: number;
  readonly ring?: HashRing;
  /** Monotonic ms, to time the two phases (0 without). */
  readonly clock?: () => number;
}

/**
 * The seeds' algorithm as written (000 "Two-Phase Assignment Algorithm"), kept as the baseline:
 *
 * - `balance`: phase 1 puts every chamber on its ring owner (xxHash64, 200 vnodes per defender,
 *   ignoring the previous map); phase 2 moves the heaviest chambers of defenders above
 *   avg x 1.2 to defenders below avg x 0.8 while the destination stays <= avg x 1.2, for at most
 *   5 iterations, with the seed's integer arithmetic (avg = floor(total / defenders)).
 * - `orphans-only`: the seed's EMERGENCY handler: previous owners kept, each orphaned or new
 *   chamber goes to its ring owner among the live defenders, no phase 2.
 *
 * Three mechanical deviations, so it is a deterministic baseline rather than a copy of bugs:
 * defenders and chambers are visited in sorted order (Go map order is random); a chamber moves
 * at most once per pass (the Go loop keeps offering an already-moved chamber to the next
 * underloaded defender and subtracts its weight twice); and live defenders without chambers count
 * as underloaded (the Go code only knows defenders that already hold a chamber).
 */
export function seedTwoPhase(p: Problem, options: SeedTwoPhaseOptions): Placement {
  const now = options.clock ?? (() => 0);
  const t0 = now();
  const ring = options.ring ?? new HashRing({ vnodes: options.vnodes });
  ring.setNodes(p.ids);
  const indexOf = new Map<string, number>();
  p.ids.forEach((id, d) => indexOf.set(id, d));
  const owner = new Int32Array(p.n);
  const reason = new Uint8Array(p.n);
  const ringOwner = (i: number) => {
    const digest = xxh64Digest(p.keys[i]);
    return indexOf.get(ring.ownerOf({ hi: digest.readUInt32BE(0), lo: digest.readUInt32BE(4) })) as number;
  };

  if (p.mode === 'orphans-only') {
    for (let i = 0; i < p.n; i++) {
      const was = p.prevOwner[i];
      if (was >= 0) {
        owner[i] = was;
      } else {
        owner[i] = ringOwner(i);
        if (was === ORPHAN) reason[i] = REASON_ORPHANED;
      }
    }
    return { owner, reason, phases: { phase1Ms: Math.max(0, now() - t0), phase2Ms: 0, rebalanceIterations: 0 } };
  }

  for (let i = 0; i < p.n; i++) {
    owner[i] = ringOwner(i);
    if (p.prevOwner[i] === ORPHAN) reason[i] = REASON_ORPHANED;
    else reason[i] = REASON_REBALANCE;
  }
  const t1 = now();
  const rebalanceIterations = rebalanceByWeight(p, owner);
  const t2 = now();
  return { owner, reason, phases: { phase1Ms: Math.max(0, t1 - t0), phase2Ms: Math.max(0, t2 - t1), rebalanceIterations } };
}

/**
 * Phase 2, following the seed's `rebalanceByWeight` (see {@link seedTwoPhase} for deviations).
 * Returns the iterations it ran (at most 5).
 */
function rebalanceByWeight(p: Problem, owner: Int32Array): number {
  const { weight } = p;
  const loads = new Float64Array(p.m);
  const chambers: number[][] = Array.from({ length: p.m }, () => []);
  let total = 0;
  for (let i = 0; i < p.n; i++) {
    loads[owner[i]] += weight[i];
    chambers[owner[i]].push(i);
    total += weight[i];
  }
  if (p.m === 0) return 0;
  const avg = Math.floor(total / p.m);
  const maxWeight = Math.floor((avg * 12) / 10);
  const minWeight = Math.floor((avg * 8) / 10);
  const classify = () => {
    const over: number[] = [];
    const under: number[] = [];
    for (let d = 0; d < p.m; d++) {
      if (loads[d] > maxWeight) over.push(d);
      else if (loads[d] < minWeight) under.push(d);
    }
    return { over, under };
  };
  let { over, under } = classify();
  let iteration = 0;
  for (; iteration < 5 && over.length > 0 && under.length > 0; iteration++) {
    for (const src of over) {
      const list = [...chambers[src]].sort((a, b) => weight[b] - weight[a] || a - b);
      for (const c of list) {
        const w = weight[c];
        for (const dst of under) {
          if (loads[dst] + w <= maxWeight) {
            loads[src] -= w;
            loads[dst] += w;
            owner[c] = dst;
            chambers[dst].push(c);
            const at = chambers[src].indexOf(c);
            chambers[src].splice(at, 1);
            break;
          }
        }
        if (loads[src] <= maxWeight) break;
      }
    }
    ({ over, under } = classify());
  }
  return iteration;
}
