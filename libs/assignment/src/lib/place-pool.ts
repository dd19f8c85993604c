import { DefenderHeap } from './defender-heap';
import { heaviestFirst } from './heaviest-first';
import type { PlacementState } from './placement-state';

/** Step 3: largest first onto the least-loaded defender that keeps it inside the band. */
export function placePool(s: PlacementState): void {
  const { p, load, count, upper, eps } = s;
  const { weight, capacity } = p;
  if (s.pool.length === 0) return;
  const pool = heaviestFirst(s.pool.splice(0), weight);
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
      s.assign(i, pin);
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
    if (load[d] + w > upper[d] + eps[d] && !p.uniformCapacity) d = bestFor(s, w, heap);
    s.assign(i, d);
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
    s.assign(pool[k], best);
  }
}

/** With unequal capacities: least loaded among defenders where `w` fits the band, else least after. */
function bestFor(s: PlacementState, w: number, heap: DefenderHeap): number {
  const { p, load, count, upper, eps } = s;
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
