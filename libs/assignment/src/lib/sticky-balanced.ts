import { placePool } from './place-pool';
import { type PhaseTimes, type Placement, REASON_CAP, REASON_ORPHANED } from './placement';
import { PlacementState } from './placement-state';
import { ORPHAN, type Problem } from './problem';
import { repair } from './repair';
import { shedForDemand, shedOverloaded } from './shedding';

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
 *
 * Step 1 is here; step 2 in `shedding.ts`, step 3 in `place-pool.ts`, step 4 in `repair.ts`, all on
 * the bookkeeping of `placement-state.ts`. Phase 1 is steps 1 and 3 (keep, place the pool), phase 2
 * steps 2 and 4 (shed, repair); its rounds are the shedding passes that moved something plus the
 * repair rounds.
 */
export function stickyBalanced(p: Problem, clock?: () => number): Placement {
  const s = new PlacementState(p);
  const now = clock ?? (() => 0);
  const t0 = now();
  for (let i = 0; i < p.n; i++) {
    const was = p.prevOwner[i];
    if (was >= 0) {
      s.assign(i, was);
    } else {
      if (was === ORPHAN) s.reason[i] = REASON_ORPHANED;
      s.pool.push(i);
    }
  }
  enforceChamberCap(s);
  let phase1Ms = now() - t0;
  let phase2Ms = 0;
  let shedRounds = 0;
  let repairSteps = 0;
  if (p.mode === 'balance') {
    const t = now();
    const pooled = s.pool.length;
    shedOverloaded(s);
    if (s.pool.length > pooled) shedRounds++;
    const overloadShed = s.pool.length;
    shedForDemand(s);
    if (s.pool.length > overloadShed) shedRounds++;
    phase2Ms += now() - t;
  }
  const placing = now();
  placePool(s);
  phase1Ms += now() - placing;
  if (p.mode === 'balance') {
    const t = now();
    repairSteps = repair(s);
    phase2Ms += now() - t;
  }
  const phases: PhaseTimes = {
    phase1Ms: Math.max(0, phase1Ms),
    phase2Ms: Math.max(0, phase2Ms),
    rebalanceIterations: shedRounds + repairSteps,
  };
  return { owner: s.owner, reason: s.reason, phases };
}

/** Mandatory: a defender above the chamber cap gives up its lightest chambers. */
function enforceChamberCap(s: PlacementState): void {
  const { p } = s;
  if (!Number.isFinite(p.maxChambers)) return;
  for (let d = 0; d < p.m; d++) {
    const excess = s.count[d] - p.maxChambers;
    if (excess <= 0) continue;
    // Lightest first, chambers outside their cooldown before those inside it.
    const order = [...s.members[d]].sort(
      (a, b) => p.locked[a] - p.locked[b] || p.weight[a] - p.weight[b] || a - b,
    );
    for (let k = 0; k < excess; k++) s.shed(order[k], REASON_CAP);
  }
}
