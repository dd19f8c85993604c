import { DefenderHeap } from './defender-heap';
import { ORPHAN, type Problem } from './problem';

/** Reason codes kept per chamber while computing; mapped to `MoveReason` for the result. */
export const REASON_NONE = 0;
export const REASON_ORPHANED = 1;
export const REASON_REBALANCE = 2;
export const REASON_CAP = 3;

/** Owner per chamber (defender index) and the reason code of the last time it was taken off one. */
export interface Placement {
  readonly owner: Int32Array;
  readonly reason: Uint8Array;
  /** The two phases of the computation (seed 000's metrics), measured with the clock given. */
  readonly phases?: PhaseTimes;
}

/**
 * Seed 000's phases: phase 1 places every chamber (kept owners, then the pool); phase 2 is the
 * weight rebalancing (`balance` mode only). `rebalanceIterations` counts phase 2's rounds.
 */
export interface PhaseTimes {
  readonly phase1Ms: number;
  readonly phase2Ms: number;
  readonly rebalanceIterations: number;
}

/** The golden ratio's fractional part: successive multiples spread evenly over [0, 1). */
const GOLDEN = 0.6180339887498949;

/** Relative slack for float comparisons against the band, so rounding never triggers a move. */
const REL_EPS = 1e-9;

/**
 * The default strategy ("sticky-balanced"). Outline (details in the README):
 *
 * 1. Keep every chamber whose previous owner is live. Orphans (owner gone) and new chambers go
 *    to a pool. Defenders above the chamber cap give up their lightest chambers (mandatory).
 * 2. `balance` mode only, voluntary moves (chambers in cooldown never move):
 *    a. a defender above the band (share x (1 + tol)) sheds down to share x (1 + tol/2);
 *    b. if the pool cannot lift every defender below the band (share x (1 - tol)) to
 *       share x (1 - tol/2), the most loaded defenders shed down to a common level (water
 *       filling from the top, never below their share) until it can.
 *    Shedding gives up a systematic sample of the donor's chambers in weight order (the mix of
 *    sizes of those that stay), brought nearer the amount by exchanges, and, when a minimum must
 *    be reached, the smallest chamber that reaches it.
 * 3. Place the pool largest first, each chamber on the least-loaded defender (load / capacity)
 *    where it stays inside the band, else where it ends least loaded (list scheduling). This
 *    bounds every defender by max(1 + tol, 1 + w_max / share_min) x its share.
 * 4. `balance` mode only: repair what granularity left outside the band with single moves, then
 *    two-chamber swaps, each of which strictly reduces the total band violation and never pushes
 *    a defender out of the band.
 *
 * With the same live defenders and a result already inside the band nothing moves.
 */
export function stickyBalanced(p: Problem, clock?: () => number): Placement {
  return new StickyBalanced(p, clock).run();
}

class StickyBalanced {
  private readonly owner: Int32Array;
  private readonly reason: Uint8Array;
  private readonly load: Float64Array;
  private readonly count: Int32Array;
  private readonly members: number[][];
  private readonly pos: Int32Array;
  private readonly upper: Float64Array;
  private readonly lower: Float64Array;
  private readonly eps: Float64Array;
  private readonly pool: number[] = [];
  /** 1 when the chamber never moves voluntarily: inside its cooldown, or dedicated to its defender. */
  private readonly fixed: Uint8Array;
  /** Repair rounds taken (step 4). */
  private repairSteps = 0;

  constructor(
    private readonly p: Problem,
    private readonly clock?: () => number,
  ) {
    this.fixed = p.locked.slice();
    for (let i = 0; i < p.n; i++) if (p.pinned[i] >= 0 && p.prevOwner[i] === p.pinned[i]) this.fixed[i] = 1;
    this.owner = new Int32Array(p.n).fill(-1);
    this.reason = new Uint8Array(p.n);
    this.load = new Float64Array(p.m);
    this.count = new Int32Array(p.m);
    this.members = Array.from({ length: p.m }, () => []);
    this.pos = new Int32Array(p.n);
    this.upper = new Float64Array(p.m);
    this.lower = new Float64Array(p.m);
    this.eps = new Float64Array(p.m);
    for (let d = 0; d < p.m; d++) {
      // Bands around the target: the capacity share, or a dedicated chamber's weight and an even
      // split of the rest (a chamber heavier than a share; see `Problem.target`).
      this.upper[d] = p.target[d] * (1 + p.tolerance);
      this.lower[d] = p.target[d] * (1 - p.tolerance);
      this.eps[d] = p.target[d] * REL_EPS;
    }
  }

  /**
   * Phase 1 is steps 1 and 3 (keep, place the pool), phase 2 steps 2 and 4 (shed, repair); its
   * rounds are the shedding passes that moved something plus the repair rounds.
   */
  run(): Placement {
    const { p } = this;
    const now = this.clock ?? (() => 0);
    const t0 = now();
    for (let i = 0; i < p.n; i++) {
      const was = p.prevOwner[i];
      if (was >= 0) {
        this.assign(i, was);
      } else {
        if (was === ORPHAN) this.reason[i] = REASON_ORPHANED;
        this.pool.push(i);
      }
    }
    this.enforceChamberCap();
    let phase1Ms = now() - t0;
    let phase2Ms = 0;
    let shedRounds = 0;
    if (p.mode === 'balance') {
      const t = now();
      const pooled = this.pool.length;
      this.shedOverloaded();
      if (this.pool.length > pooled) shedRounds++;
      const overloadShed = this.pool.length;
      this.shedForDemand();
      if (this.pool.length > overloadShed) shedRounds++;
      phase2Ms += now() - t;
    }
    const placing = now();
    this.placePool();
    phase1Ms += now() - placing;
    if (p.mode === 'balance') {
      const t = now();
      this.repair();
      phase2Ms += now() - t;
    }
    const phases: PhaseTimes = {
      phase1Ms: Math.max(0, phase1Ms),
      phase2Ms: Math.max(0, phase2Ms),
      rebalanceIterations: shedRounds + this.repairSteps,
    };
    return { owner: this.owner, reason: this.reason, phases };
  }

  private assign(i: number, d: number): void {
    this.owner[i] = d;
    this.load[d] += this.p.weight[i];
    this.count[d]++;
    this.pos[i] = this.members[d].length;
    this.members[d].push(i);
  }

  private unassign(i: number): void {
    const d = this.owner[i];
    this.load[d] -= this.p.weight[i];
    this.count[d]--;
    const list = this.members[d];
    const last = list.pop() as number;
    if (last !== i) {
      list[this.pos[i]] = last;
      this.pos[last] = this.pos[i];
    }
    this.owner[i] = -1;
  }

  private move(i: number, to: number, reason: number): void {
    this.unassign(i);
    this.reason[i] = reason;
    this.assign(i, to);
  }

  private shed(i: number, reason: number): void {
    this.unassign(i);
    this.reason[i] = reason;
    this.pool.push(i);
  }

  /** Unlocked chambers of `d` with positive weight, heaviest first (ties: smaller key first). */
  private movable(d: number): number[] {
    const { weight } = this.p;
    const locked = this.fixed;
    return heaviestFirst(
      this.members[d].filter((i) => locked[i] === 0 && weight[i] > 0),
      weight,
    );
  }

  /** Mandatory: a defender above the chamber cap gives up its lightest chambers. */
  private enforceChamberCap(): void {
    const { p } = this;
    if (!Number.isFinite(p.maxChambers)) return;
    for (let d = 0; d < p.m; d++) {
      const excess = this.count[d] - p.maxChambers;
      if (excess <= 0) continue;
      // Lightest first, chambers outside their cooldown before those inside it.
      const order = [...this.members[d]].sort(
        (a, b) => p.locked[a] - p.locked[b] || p.weight[a] - p.weight[b] || a - b,
      );
      for (let k = 0; k < excess; k++) this.shed(order[k], REASON_CAP);
    }
  }

  /**
   * Sheds about `target` weight from `d` as a sample of its chambers that looks like the rest: the
   * movable chambers in weight order, every k-th one (a systematic sample at the fraction
   * target / movable weight), so the chambers that leave carry the same mix of sizes as those that
   * stay. Both sides then hold the same share of the count as of the weight, and a defender's CPU
   * and memory follow its weight however far the load model's split between fixed and per-sample
   * cost is off. Then as near `target` as exchanging picks for chambers left behind gets
   * ({@link nearTarget}), and at least `minimum` (the smallest unpicked chamber that reaches it,
   * or the heaviest left).
   */
  private shedAmount(d: number, minimum: number, target: number, phase: { acc: number } = { acc: (d * GOLDEN) % 1 }): number {
    const { weight } = this.p;
    const cands = this.movable(d);
    const picked = new Uint8Array(cands.length);
    let total = 0;
    for (let k = 0; k < cands.length; k++) total += weight[cands[k]];
    let taken = 0;
    if (target > this.eps[d] && total > 0) {
      const f = Math.min(1, target / total);
      for (let k = 0; k < cands.length; k++) {
        phase.acc += f;
        if (phase.acc >= 1) {
          phase.acc -= 1;
          picked[k] = 1;
          taken += weight[cands[k]];
        }
      }
      taken += this.nearTarget(cands, picked, taken, target, this.eps[d]);
    }
    while (taken < minimum - this.eps[d]) {
      const need = minimum - taken;
      let choice = -1;
      // cands is heaviest first: scan from the light end for the first unpicked chamber >= need.
      for (let k = cands.length - 1; k >= 0; k--) {
        if (picked[k] === 0 && weight[cands[k]] >= need) {
          choice = k;
          break;
        }
      }
      if (choice < 0) choice = picked.indexOf(0);
      if (choice < 0) break;
      picked[choice] = 1;
      taken += weight[cands[choice]];
    }
    for (let k = 0; k < cands.length; k++) if (picked[k] === 1) this.shed(cands[k], REASON_REBALANCE);
    return taken;
  }

  /**
   * Brings a sample's weight nearer `target` by exchanging picks for chambers left behind, each time
   * the one exchange (a picked chamber for an unpicked one, found by binary search in the weight
   * order) that most reduces the distance; the count of picks stays, so does the mix of sizes.
   * Returns the change of the sample's weight.
   */
  private nearTarget(cands: number[], picked: Uint8Array, taken: number, target: number, eps: number): number {
    const { weight } = this.p;
    let delta = 0;
    for (let round = 0; round < 4; round++) {
      const diff = taken + delta - target;
      if (Math.abs(diff) <= eps) break;
      const left: number[] = [];
      for (let k = 0; k < cands.length; k++) if (picked[k] === 0) left.push(k);
      if (left.length === 0) break;
      let best = Math.abs(diff);
      let bestOut = -1;
      let bestIn = -1;
      for (let k = 0; k < cands.length; k++) {
        if (picked[k] === 0) continue;
        // Wanted: an unpicked chamber of weight w_k - diff; `left` is heaviest first.
        const want = weight[cands[k]] - diff;
        let lo = 0;
        let hi = left.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (weight[cands[left[mid]]] > want) lo = mid + 1;
          else hi = mid;
        }
        // The nearest on either side of `want`: left[lo - 1] (heavier) and left[lo].
        for (let j = Math.max(0, lo - 1); j <= lo && j < left.length; j++) {
          const after = Math.abs(diff - weight[cands[k]] + weight[cands[left[j]]]);
          if (after < best - eps) {
            best = after;
            bestOut = k;
            bestIn = left[j];
          }
        }
      }
      if (bestOut < 0) break;
      picked[bestOut] = 0;
      picked[bestIn] = 1;
      delta += weight[cands[bestIn]] - weight[cands[bestOut]];
    }
    return delta;
  }

  /** Step 2a: every defender above the band sheds to share x (1 + tol/2). */
  private shedOverloaded(): void {
    const { p } = this;
    for (let d = 0; d < p.m; d++) {
      if (this.load[d] <= this.upper[d] + this.eps[d]) continue;
      const aim = p.target[d] * (1 + p.tolerance / 2);
      this.shedAmount(d, this.load[d] - this.upper[d], this.load[d] - aim);
    }
  }

  /**
   * Step 2b: make the pool large enough to lift every defender below the band to
   * share x (1 - tol/2), by lowering the most loaded defenders to a common level (not below share).
   */
  private shedForDemand(): void {
    const { p } = this;
    let demand = 0;
    for (let d = 0; d < p.m; d++) {
      if (this.count[d] >= p.maxChambers) continue;
      if (this.load[d] < this.lower[d] - this.eps[d])
        demand += p.target[d] * (1 - p.tolerance / 2) - this.load[d];
    }
    if (demand <= 0) return;
    let supply = 0;
    for (const i of this.pool) supply += p.weight[i];
    const missing = demand - supply;
    if (missing <= 0) return;

    // Water level rho (as a ratio of share): sum over donors of share x (ratio - rho) = missing.
    const donors: number[] = [];
    for (let d = 0; d < p.m; d++) if (this.load[d] > p.target[d] + this.eps[d]) donors.push(d);
    if (donors.length === 0) return;
    const ratio = (d: number) => this.load[d] / p.target[d];
    donors.sort((a, b) => ratio(b) - ratio(a) || a - b);
    let sumShare = 0;
    let sumLoad = 0;
    let rho = 1;
    for (let k = 0; k < donors.length; k++) {
      sumShare += p.target[donors[k]];
      sumLoad += this.load[donors[k]];
      const level = (sumLoad - missing) / sumShare;
      const nextRatio = k + 1 < donors.length ? ratio(donors[k + 1]) : 1;
      if (level >= nextRatio) {
        rho = Math.max(1, level);
        break;
      }
      rho = Math.max(1, level);
    }
    let still = missing;
    // One systematic sample over the donors' chambers in turn (its phase carried from donor to
    // donor): when each donor sheds less than a chamber's worth, together they still give up about
    // the amount, in chambers of every size.
    const phase = { acc: 0.5 };
    for (const d of donors) {
      const amount = this.load[d] - rho * p.target[d];
      if (amount <= this.eps[d]) continue;
      still -= this.shedAmount(d, 0, Math.min(amount, still), phase);
      if (still <= 0) break;
    }
  }

  /** Step 3: largest first onto the least-loaded defender that keeps it inside the band. */
  private placePool(): void {
    const { p, load, count, upper, eps } = this;
    const { weight, capacity } = p;
    if (this.pool.length === 0) return;
    const pool = heaviestFirst(this.pool.splice(0), weight);
    const heap = new DefenderHeap(p.m, load, capacity, count);
    // A defender given a chamber of its own takes nothing else from the pool while another can.
    let open = 0;
    for (let d = 0; d < p.m; d++) if (count[d] < p.maxChambers && p.dedicated[d] === 0) open++;
    for (let d = 0; d < p.m; d++) {
      if (count[d] < p.maxChambers && (p.dedicated[d] === 0 || open === 0)) heap.push(d);
    }

    let k = 0;
    for (; k < pool.length && weight[pool[k]] > 0; k++) {
      const i = pool[k];
      const w = weight[i];
      const pin = p.pinned[i];
      if (pin >= 0 && count[pin] < p.maxChambers) {
        this.assign(i, pin);
        if (heap.has(pin)) {
          if (count[pin] >= p.maxChambers) heap.remove(pin);
          else heap.update(pin);
        }
        continue;
      }
      if (heap.length === 0) {
        for (let d = 0; d < p.m; d++) if (count[d] < p.maxChambers) heap.push(d);
      }
      let d = heap.peek();
      if (load[d] + w > upper[d] + eps[d] && !p.uniformCapacity) d = this.bestFor(w, heap);
      this.assign(i, d);
      if (count[d] >= p.maxChambers) heap.remove(d);
      else heap.update(d);
    }
    // Zero-weight chambers carry no load: spread them by chamber count.
    for (; k < pool.length; k++) {
      let best = -1;
      for (let d = 0; d < p.m; d++) {
        if (count[d] >= p.maxChambers) continue;
        if (best < 0 || count[d] < count[best]) best = d;
      }
      this.assign(pool[k], best);
    }
  }

  /** With unequal capacities: least loaded among defenders where `w` fits the band, else least after. */
  private bestFor(w: number, heap: DefenderHeap): number {
    const { p, load, count, upper, eps } = this;
    let fit = -1;
    let fallback = -1;
    for (let d = 0; d < p.m; d++) {
      if (!heap.has(d)) continue;
      const after = (load[d] + w) / p.capacity[d];
      if (load[d] + w <= upper[d] + eps[d]) {
        const cur = load[d] / p.capacity[d];
        if (fit < 0) fit = d;
        else {
          const best = load[fit] / p.capacity[fit];
          if (cur < best || (cur === best && count[d] < count[fit])) fit = d;
        }
      }
      if (fallback < 0 || after < (load[fallback] + w) / p.capacity[fallback]) fallback = d;
    }
    return fit >= 0 ? fit : fallback;
  }

  /** Step 4: fix band violations left by chamber granularity. */
  private repair(): void {
    const { p } = this;
    const stuck = new Uint8Array(p.m);
    const maxSteps = 4 * p.m + 64;
    for (let step = 0; step < maxSteps; step++) {
      let worst = -1;
      let worstGap = 0;
      let worstOver = false;
      for (let d = 0; d < p.m; d++) {
        if (stuck[d] === 1 || p.target[d] <= 0) continue;
        const over = this.load[d] - this.upper[d];
        const under = this.lower[d] - this.load[d];
        const gap = Math.max(over, under);
        if (gap <= this.eps[d]) continue;
        const rel = gap / p.target[d];
        if (rel > worstGap) {
          worst = d;
          worstGap = rel;
          worstOver = over > 0;
        }
      }
      if (worst < 0) return;
      this.repairSteps++;
      const fixed = worstOver ? this.relieve(worst) : this.fill(worst);
      if (!fixed) stuck[worst] = 1;
    }
  }

  /** Defender indexes other than `v`, ordered by load / capacity (ascending or descending). */
  private byLoad(v: number, descending: boolean): number[] {
    const { p } = this;
    const out: number[] = [];
    for (let d = 0; d < p.m; d++) if (d !== v) out.push(d);
    const r = (d: number) => this.load[d] / p.capacity[d];
    return out.sort((a, b) => (descending ? r(b) - r(a) : r(a) - r(b)) || a - b);
  }

  /**
   * Among `from`'s movable chambers with weight <= limit: the lightest reaching `need`, else the
   * heaviest; -1 if none.
   */
  private pick(from: number, need: number, limit: number): { i: number; reaches: boolean } {
    const { weight } = this.p;
    const locked = this.fixed;
    let reach = -1;
    let heaviest = -1;
    for (const i of this.members[from]) {
      const w = weight[i];
      if (locked[i] === 1 || w <= 0 || w > limit) continue;
      if (w >= need && (reach < 0 || w < weight[reach] || (w === weight[reach] && i < reach))) reach = i;
      if (heaviest < 0 || w > weight[heaviest] || (w === weight[heaviest] && i < heaviest)) heaviest = i;
    }
    return reach >= 0 ? { i: reach, reaches: true } : { i: heaviest, reaches: false };
  }

  /** `v` is above the band: move one chamber to a defender with room, else swap. */
  private relieve(v: number): boolean {
    const { p } = this;
    const need = this.load[v] - this.upper[v];
    const maxOff = this.load[v] - this.lower[v];
    let partial: { i: number; to: number } | undefined;
    const receivers = this.byLoad(v, false).filter((y) => this.count[y] < p.maxChambers);
    for (const y of receivers) {
      const limit = Math.min(this.upper[y] + this.eps[y] - this.load[y], maxOff);
      if (limit <= 0) continue;
      const c = this.pick(v, need, limit);
      if (c.i < 0) continue;
      if (c.reaches) {
        this.move(c.i, y, REASON_REBALANCE);
        return true;
      }
      if (partial === undefined) partial = { i: c.i, to: y };
    }
    if (partial !== undefined) {
      this.move(partial.i, partial.to, REASON_REBALANCE);
      return true;
    }
    for (const y of receivers.slice(0, 8)) {
      const limit = Math.min(this.upper[y] + this.eps[y] - this.load[y], maxOff);
      if (limit > 0 && this.swap(v, y, need, limit)) return true;
    }
    return false;
  }

  /** `v` is below the band: take one chamber from a defender that stays in the band, else swap. */
  private fill(v: number): boolean {
    const { p } = this;
    if (this.count[v] >= p.maxChambers) return false;
    const need = this.lower[v] - this.load[v];
    const room = this.upper[v] + this.eps[v] - this.load[v];
    let partial: { i: number; from: number } | undefined;
    const donors = this.byLoad(v, true);
    for (const x of donors) {
      const limit = Math.min(room, this.load[x] - this.lower[x] + this.eps[x]);
      if (limit <= 0) continue;
      const c = this.pick(x, need, limit);
      if (c.i < 0) continue;
      if (c.reaches) {
        this.move(c.i, v, REASON_REBALANCE);
        return true;
      }
      if (partial === undefined) partial = { i: c.i, from: x };
    }
    if (partial !== undefined) {
      this.move(partial.i, v, REASON_REBALANCE);
      return true;
    }
    for (const x of donors.slice(0, 8)) {
      const limit = Math.min(room, this.load[x] - this.lower[x] + this.eps[x]);
      if (limit > 0 && this.swap(x, v, need, limit)) return true;
    }
    return false;
  }

  /**
   * Swaps a heavier chamber of `a` with a lighter one of `b` so that `a` loses (and `b` gains)
   * d = w1 - w2 with 0 < d <= limit, preferring the smallest d >= need, else the largest d.
   */
  private swap(a: number, b: number, need: number, limit: number): boolean {
    const { weight } = this.p;
    const locked = this.fixed;
    const bs = this.members[b].filter((i) => locked[i] === 0).sort((x, y) => weight[x] - weight[y] || x - y);
    if (bs.length === 0) return false;
    const bw = bs.map((i) => weight[i]);
    // First index in bw with value >= x.
    const lowerBound = (x: number) => {
      let lo = 0;
      let hi = bw.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (bw[mid] < x) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    let best: { c1: number; c2: number; d: number; reaches: boolean } | undefined;
    for (const c1 of this.members[a]) {
      if (locked[c1] === 1) continue;
      const w1 = weight[c1];
      // Candidates w2 in [w1 - limit, w1): d in (0, limit].
      const start = lowerBound(w1 - limit);
      const end = lowerBound(w1); // exclusive: w2 < w1
      if (start >= end) continue;
      // Smallest d >= need: the largest w2 <= w1 - need.
      const j = lowerBound(w1 - need + Number.EPSILON * w1) - 1;
      let c2: number;
      let reaches: boolean;
      if (j >= start && j < end) {
        c2 = bs[j];
        reaches = true;
      } else {
        c2 = bs[start];
        reaches = false;
      }
      const d = w1 - weight[c2];
      if (d <= 0) continue;
      if (
        best === undefined ||
        (reaches && !best.reaches) ||
        (reaches === best.reaches && (reaches ? d < best.d : d > best.d)) ||
        (reaches === best.reaches && d === best.d && c1 < best.c1)
      ) {
        best = { c1, c2, d, reaches };
      }
    }
    if (best === undefined) return false;
    this.move(best.c1, b, REASON_REBALANCE);
    this.move(best.c2, a, REASON_REBALANCE);
    return true;
  }
}

/**
 * Sorts chamber indexes by weight descending, then index ascending. When every weight is an
 * integer small enough, each (weight, index) pair is packed into one exact double and sorted by the
 * native numeric typed-array sort (~5x faster than a comparator for a full pool); otherwise it
 * falls back to a comparator sort. Both give the same order.
 */
export function heaviestFirst(items: number[], weight: Float64Array): number[] {
  const n = items.length;
  let maxW = 0;
  let integral = true;
  let maxIndex = 0;
  for (const i of items) {
    const w = weight[i];
    if (w > maxW) maxW = w;
    if (!Number.isInteger(w)) integral = false;
    if (i > maxIndex) maxIndex = i;
  }
  const span = maxIndex + 1;
  if (!integral || (maxW + 1) * span >= Number.MAX_SAFE_INTEGER) {
    return items.sort((a, b) => weight[b] - weight[a] || a - b);
  }
  const packed = new Float64Array(n);
  for (let k = 0; k < n; k++) packed[k] = (maxW - weight[items[k]]) * span + items[k];
  packed.sort();
  for (let k = 0; k < n; k++) items[k] = packed[k] % span;
  return items;
}
