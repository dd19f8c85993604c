import { REASON_REBALANCE } from './placement';
import type { PlacementState } from './placement-state';

/** The golden ratio's fractional part: successive multiples spread evenly over [0, 1). */
const GOLDEN = 0.6180339887498949;

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
function shedAmount(s: PlacementState, d: number, minimum: number, target: number, phase: { acc: number } = { acc: (d * GOLDEN) % 1 }): number {
  const { weight } = s.p;
  const cands = s.movable(d);
  const picked = new Uint8Array(cands.length);
  let total = 0;
  for (let k = 0; k < cands.length; k++) total += weight[cands[k]];
  let taken = 0;
  if (target > s.eps[d] && total > 0) {
    const f = Math.min(1, target / total);
    for (let k = 0; k < cands.length; k++) {
      phase.acc += f;
      if (phase.acc >= 1) {
        phase.acc -= 1;
        picked[k] = 1;
        taken += weight[cands[k]];
      }
    }
    taken += nearTarget(s, cands, picked, taken, target, s.eps[d]);
  }
  while (taken < minimum - s.eps[d]) {
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
  for (let k = 0; k < cands.length; k++) if (picked[k] === 1) s.shed(cands[k], REASON_REBALANCE);
  return taken;
}

/**
 * Brings a sample's weight nearer `target` by exchanging picks for chambers left behind, each time
 * the one exchange (a picked chamber for an unpicked one, found by binary search in the weight
 * order) that most reduces the distance; the count of picks stays, so does the mix of sizes.
 * Returns the change of the sample's weight.
 */
function nearTarget(s: PlacementState, cands: number[], picked: Uint8Array, taken: number, target: number, eps: number): number {
  const { weight } = s.p;
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
export function shedOverloaded(s: PlacementState): void {
  const { p } = s;
  for (let d = 0; d < p.m; d++) {
    if (s.load[d] <= s.upper[d] + s.eps[d]) continue;
    const aim = p.target[d] * (1 + p.tolerance / 2);
    shedAmount(s, d, s.load[d] - s.upper[d], s.load[d] - aim);
  }
}

/**
 * Step 2b: make the pool large enough to lift every defender below the band to
 * share x (1 - tol/2), by lowering the most loaded defenders to a common level (not below share).
 */
export function shedForDemand(s: PlacementState): void {
  const { p } = s;
  let demand = 0;
  for (let d = 0; d < p.m; d++) {
    if (s.count[d] >= p.maxChambers) continue;
    if (s.load[d] < s.lower[d] - s.eps[d])
      demand += p.target[d] * (1 - p.tolerance / 2) - s.load[d];
  }
  if (demand <= 0) return;
  let supply = 0;
  for (const i of s.pool) supply += p.weight[i];
  const missing = demand - supply;
  if (missing <= 0) return;

  // Water level rho (as a ratio of share): sum over donors of share x (ratio - rho) = missing.
  const donors: number[] = [];
  for (let d = 0; d < p.m; d++) if (s.load[d] > p.target[d] + s.eps[d]) donors.push(d);
  if (donors.length === 0) return;
  const ratio = (d: number) => s.load[d] / p.target[d];
  donors.sort((a, b) => ratio(b) - ratio(a) || a - b);
  let sumShare = 0;
  let sumLoad = 0;
  let rho = 1;
  for (let k = 0; k < donors.length; k++) {
    sumShare += p.target[donors[k]];
    sumLoad += s.load[donors[k]];
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
    const amount = s.load[d] - rho * p.target[d];
    if (amount <= s.eps[d]) continue;
    still -= shedAmount(s, d, 0, Math.min(amount, still), phase);
    if (still <= 0) break;
  }
}
