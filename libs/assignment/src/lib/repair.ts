import { REASON_REBALANCE } from './placement';
import type { PlacementState } from './placement-state';

/** Step 4: fix band violations left by chamber granularity. Returns the rounds taken. */
export function repair(s: PlacementState): number {
  const { p } = s;
  let rounds = 0;
  const stuck = new Uint8Array(p.m);
  const maxSteps = 4 * p.m + 64;
  for (let step = 0; step < maxSteps; step++) {
    let worst = -1;
    let worstGap = 0;
    let worstOver = false;
    for (let d = 0; d < p.m; d++) {
      if (stuck[d] === 1 || p.target[d] <= 0) continue;
      const over = s.load[d] - s.upper[d];
      const under = s.lower[d] - s.load[d];
      const gap = Math.max(over, under);
      if (gap <= s.eps[d]) continue;
      const rel = gap / p.target[d];
      if (rel > worstGap) {
        worst = d;
        worstGap = rel;
        worstOver = over > 0;
      }
    }
    if (worst < 0) return rounds;
    rounds++;
    const fixed = worstOver ? relieve(s, worst) : fill(s, worst);
    if (!fixed) stuck[worst] = 1;
  }
  return rounds;
}

/** Defender indexes other than `v`, ordered by load / capacity (ascending or descending). */
function byLoad(s: PlacementState, v: number, descending: boolean): number[] {
  const { p } = s;
  const out: number[] = [];
  for (let d = 0; d < p.m; d++) if (d !== v) out.push(d);
  const r = (d: number) => s.load[d] / p.capacity[d];
  return out.sort((a, b) => (descending ? r(b) - r(a) : r(a) - r(b)) || a - b);
}

/**
 * Among `from`'s movable chambers with weight <= limit: the lightest reaching `need`, else the
 * heaviest; -1 if none.
 */
function pick(s: PlacementState, from: number, need: number, limit: number): { i: number; reaches: boolean } {
  const { weight } = s.p;
  const locked = s.fixed;
  let reach = -1;
  let heaviest = -1;
  for (const i of s.members[from]) {
    const w = weight[i];
    if (locked[i] === 1 || w <= 0 || w > limit) continue;
    if (w >= need && (reach < 0 || w < weight[reach] || (w === weight[reach] && i < reach))) reach = i;
    if (heaviest < 0 || w > weight[heaviest] || (w === weight[heaviest] && i < heaviest)) heaviest = i;
  }
  return reach >= 0 ? { i: reach, reaches: true } : { i: heaviest, reaches: false };
}

/** `v` is above the band: move one chamber to a defender with room, else swap. */
function relieve(s: PlacementState, v: number): boolean {
  const { p } = s;
  const need = s.load[v] - s.upper[v];
  const maxOff = s.load[v] - s.lower[v];
  let partial: { i: number; to: number } | undefined;
  const receivers = byLoad(s, v, false).filter((y) => s.count[y] < p.maxChambers);
  for (const y of receivers) {
    const limit = Math.min(s.upper[y] + s.eps[y] - s.load[y], maxOff);
    if (limit <= 0) continue;
    const c = pick(s, v, need, limit);
    if (c.i < 0) continue;
    if (c.reaches) {
      s.move(c.i, y, REASON_REBALANCE);
      return true;
    }
    if (partial === undefined) partial = { i: c.i, to: y };
  }
  if (partial !== undefined) {
    s.move(partial.i, partial.to, REASON_REBALANCE);
    return true;
  }
  for (const y of receivers.slice(0, 8)) {
    const limit = Math.min(s.upper[y] + s.eps[y] - s.load[y], maxOff);
    if (limit > 0 && swap(s, v, y, need, limit)) return true;
  }
  return false;
}

/** `v` is below the band: take one chamber from a defender that stays in the band, else swap. */
function fill(s: PlacementState, v: number): boolean {
  const { p } = s;
  if (s.count[v] >= p.maxChambers) return false;
  const need = s.lower[v] - s.load[v];
  const room = s.upper[v] + s.eps[v] - s.load[v];
  let partial: { i: number; from: number } | undefined;
  const donors = byLoad(s, v, true);
  for (const x of donors) {
    const limit = Math.min(room, s.load[x] - s.lower[x] + s.eps[x]);
    if (limit <= 0) continue;
    const c = pick(s, x, need, limit);
    if (c.i < 0) continue;
    if (c.reaches) {
      s.move(c.i, v, REASON_REBALANCE);
      return true;
    }
    if (partial === undefined) partial = { i: c.i, from: x };
  }
  if (partial !== undefined) {
    s.move(partial.i, v, REASON_REBALANCE);
    return true;
  }
  for (const x of donors.slice(0, 8)) {
    const limit = Math.min(room, s.load[x] - s.lower[x] + s.eps[x]);
    if (limit > 0 && swap(s, x, v, need, limit)) return true;
  }
  return false;
}

/**
 * Swaps a heavier chamber of `a` with a lighter one of `b` so that `a` loses (and `b` gains)
 * d = w1 - w2 with 0 < d <= limit, preferring the smallest d >= need, else the largest d.
 */
function swap(s: PlacementState, a: number, b: number, need: number, limit: number): boolean {
  const { weight } = s.p;
  const locked = s.fixed;
  const bs = s.members[b].filter((i) => locked[i] === 0).sort((x, y) => weight[x] - weight[y] || x - y);
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
  for (const c1 of s.members[a]) {
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
  s.move(best.c1, b, REASON_REBALANCE);
  s.move(best.c2, a, REASON_REBALANCE);
  return true;
}
