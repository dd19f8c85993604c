import { heaviestFirst } from './heaviest-first';
import type { Problem } from './problem';

/** Relative slack for float comparisons against the band, so rounding never triggers a move. */
const REL_EPS = 1e-9;

/**
 * The sticky-balanced strategy's working state: who owns each chamber, each defender's load,
 * chamber count and members, its band around the target, and the pool of chambers waiting to be
 * placed. Each step of the strategy (keep, shed, place, repair) reads and moves chambers through it.
 */
export class PlacementState {
  readonly owner: Int32Array;
  readonly reason: Uint8Array;
  readonly load: Float64Array;
  readonly count: Int32Array;
  readonly members: number[][];
  private readonly pos: Int32Array;
  readonly upper: Float64Array;
  readonly lower: Float64Array;
  readonly eps: Float64Array;
  readonly pool: number[] = [];
  /** 1 when the chamber never moves voluntarily: inside its cooldown, or dedicated to its defender. */
  readonly fixed: Uint8Array;

  constructor(readonly p: Problem) {
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

  assign(i: number, d: number): void {
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

  move(i: number, to: number, reason: number): void {
    this.unassign(i);
    this.reason[i] = reason;
    this.assign(i, to);
  }

  shed(i: number, reason: number): void {
    this.unassign(i);
    this.reason[i] = reason;
    this.pool.push(i);
  }

  /** Unlocked chambers of `d` with positive weight, heaviest first (ties: smaller key first). */
  movable(d: number): number[] {
    const { weight } = this.p;
    const locked = this.fixed;
    return heaviestFirst(
      this.members[d].filter((i) => locked[i] === 0 && weight[i] > 0),
      weight,
    );
  }
}
