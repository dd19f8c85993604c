import {
  DuplicateChamberError,
  DuplicateDefenderError,
  InfeasibleAssignmentError,
  InvalidAssignmentInputError,
  NoDefendersError,
} from './errors';
import type {
  AssignmentMode,
  AssignmentOptions,
  AssignmentStrategyName,
  ChamberInput,
  DefenderInput,
  PreviousAssignment,
} from './types';

/** `prevOwner` value of a chamber that is not in the previous map. */
export const NEW_CHAMBER = -1;
/** `prevOwner` value of a chamber whose previous owner is not live (an orphan). */
export const ORPHAN = -2;

/**
 * The validated, normalised input: chambers sorted by key and defenders sorted by id, in flat arrays
 * indexed by position. Every strategy works on indexes, so the result does not depend on input order.
 */
export interface Problem {
  readonly strategy: AssignmentStrategyName;
  readonly mode: AssignmentMode;
  readonly tolerance: number;
  /** Chamber-count cap per defender; Infinity when none. */
  readonly maxChambers: number;
  readonly cooldownMs: number;
  readonly now: number | undefined;
  readonly n: number;
  readonly keys: readonly string[];
  readonly weight: Float64Array;
  readonly m: number;
  readonly ids: readonly string[];
  readonly capacity: Float64Array;
  readonly uniformCapacity: boolean;
  /** Previous owner: a live defender index, {@link NEW_CHAMBER} or {@link ORPHAN}. */
  readonly prevOwner: Int32Array;
  /** Previous owner id of each orphan, by chamber index. */
  readonly orphanFrom: ReadonlyMap<number, string>;
  /** 1 when the chamber is inside its cooldown (no voluntary move). */
  readonly locked: Uint8Array;
  readonly lockedCount: number;
  readonly totalWeight: number;
  /** Capacity share of the total weight per defender (what the reported ratios are against). */
  readonly share: Float64Array;
  /**
   * The load each defender is balanced towards: its share, except that a chamber heavier than its
   * defender's share of the rest gets that defender to itself (target = the chamber's weight) and
   * the other defenders split the remaining weight by capacity. Equal to `share` without such a
   * chamber.
   */
  readonly target: Float64Array;
  /** Chamber index -> the defender it is dedicated to (a chamber heavier than a share), else -1. */
  readonly pinned: Int32Array;
  /** Defenders holding a dedicated chamber. */
  readonly dedicated: Uint8Array;
  readonly maxWeight: number;
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function optionProblems(o: AssignmentOptions): string[] {
  const p: string[] = [];
  if (o.strategy !== undefined && o.strategy !== 'sticky-balanced' && o.strategy !== 'seed-two-phase') {
    p.push(`unknown strategy: ${String(o.strategy)}`);
  }
  if (o.mode !== undefined && o.mode !== 'balance' && o.mode !== 'orphans-only') {
    p.push(`unknown mode: ${String(o.mode)}`);
  }
  if (o.tolerance !== undefined && !(Number.isFinite(o.tolerance) && o.tolerance >= 0 && o.tolerance < 1)) {
    p.push(`tolerance must be a number in [0, 1), got ${String(o.tolerance)}`);
  }
  if (
    o.maxChambersPerDefender !== undefined &&
    !(Number.isInteger(o.maxChambersPerDefender) && o.maxChambersPerDefender >= 1)
  ) {
    p.push(`maxChambersPerDefender must be an integer >= 1, got ${String(o.maxChambersPerDefender)}`);
  }
  if (o.cooldownMs !== undefined && !(Number.isFinite(o.cooldownMs) && o.cooldownMs >= 0)) {
    p.push(`cooldownMs must be a finite number >= 0, got ${String(o.cooldownMs)}`);
  }
  if (o.now !== undefined && !Number.isFinite(o.now))
    p.push(`now must be a finite epoch ms, got ${String(o.now)}`);
  if ((o.cooldownMs ?? 0) > 0 && o.now === undefined) p.push('now is required when cooldownMs > 0');
  if (o.strategy === 'seed-two-phase') {
    if (o.maxChambersPerDefender !== undefined)
      p.push('seed-two-phase does not support maxChambersPerDefender');
    if ((o.cooldownMs ?? 0) > 0) p.push('seed-two-phase does not support cooldownMs');
  }
  return p;
}

/**
 * Validates and normalises the input of {@link computeAssignment}.
 * @throws InvalidAssignmentInputError, DuplicateChamberError, DuplicateDefenderError,
 *   NoDefendersError, InfeasibleAssignmentError
 */
export function buildProblem(
  previous: PreviousAssignment | null,
  chambers: readonly ChamberInput[],
  defenders: readonly DefenderInput[],
  options: AssignmentOptions,
): Problem {
  const problems = optionProblems(options);
  const strategy = options.strategy ?? 'sticky-balanced';

  const sortedChambers = [...chambers].sort((a, b) => cmp(a.key, b.key));
  const n = sortedChambers.length;
  const keys = new Array<string>(n);
  const weight = new Float64Array(n);
  const dupKeys: string[] = [];
  let total = 0;
  let maxWeight = 0;
  for (let i = 0; i < n; i++) {
    const c = sortedChambers[i];
    if (typeof c.key !== 'string' || c.key === '' || c.key === '__proto__') {
      problems.push(`chamber #${i}: key must be a non-empty string other than __proto__`);
    }
    if (!(typeof c.weight === 'number' && Number.isFinite(c.weight) && c.weight >= 0)) {
      problems.push(`chamber ${c.key}: weight must be a finite number >= 0, got ${String(c.weight)}`);
    }
    if (i > 0 && c.key === keys[i - 1] && dupKeys[dupKeys.length - 1] !== c.key) dupKeys.push(c.key);
    keys[i] = c.key;
    weight[i] = c.weight;
    total += c.weight;
    if (c.weight > maxWeight) maxWeight = c.weight;
  }

  const sortedDefenders = [...defenders].sort((a, b) => cmp(a.id, b.id));
  const m = sortedDefenders.length;
  const ids = new Array<string>(m);
  const capacity = new Float64Array(m);
  const dupIds: string[] = [];
  let capTotal = 0;
  let uniformCapacity = true;
  for (let d = 0; d < m; d++) {
    const def = sortedDefenders[d];
    if (typeof def.id !== 'string' || def.id === '')
      problems.push(`defender #${d}: id must be a non-empty string`);
    const cap = def.capacity ?? 1;
    if (!(typeof cap === 'number' && Number.isFinite(cap) && cap > 0)) {
      problems.push(`defender ${def.id}: capacity must be a finite number > 0, got ${String(cap)}`);
    }
    if (strategy === 'seed-two-phase' && cap !== 1) {
      problems.push(`defender ${def.id}: seed-two-phase does not support capacity weights`);
    }
    if (d > 0 && def.id === ids[d - 1] && dupIds[dupIds.length - 1] !== def.id) dupIds.push(def.id);
    ids[d] = def.id;
    capacity[d] = cap;
    capTotal += cap;
    if (d > 0 && cap !== capacity[0]) uniformCapacity = false;
  }

  if (problems.length > 0) {
    throw new InvalidAssignmentInputError(
      `invalid assignment input (${problems.length} problem${problems.length === 1 ? '' : 's'}): ${problems.join('; ')}`,
      problems,
    );
  }
  if (dupKeys.length > 0) throw new DuplicateChamberError(dupKeys);
  if (dupIds.length > 0) throw new DuplicateDefenderError(dupIds);
  if (m === 0 && n > 0) throw new NoDefendersError(n);
  const maxChambers = options.maxChambersPerDefender ?? Number.POSITIVE_INFINITY;
  if (n > maxChambers * m) {
    throw new InfeasibleAssignmentError(
      `${n} chambers exceed maxChambersPerDefender (${maxChambers}) x ${m} live defenders`,
    );
  }

  const indexOf = new Map<string, number>();
  for (let d = 0; d < m; d++) indexOf.set(ids[d], d);
  const prevOwner = new Int32Array(n).fill(NEW_CHAMBER);
  const orphanFrom = new Map<number, string>();
  const locked = new Uint8Array(n);
  let lockedCount = 0;
  const prevMap = previous?.assignments;
  const moved = previous?.lastMovedAt;
  const cooldownMs = options.cooldownMs ?? 0;
  const now = options.now;
  for (let i = 0; i < n; i++) {
    const key = keys[i];
    // One lookup; inherited members (`constructor`, `__proto__`, ...) are never strings/numbers.
    const was: unknown = prevMap === undefined ? undefined : prevMap[key];
    if (typeof was === 'string') {
      const d = indexOf.get(was);
      if (d === undefined) {
        prevOwner[i] = ORPHAN;
        orphanFrom.set(i, was);
      } else {
        prevOwner[i] = d;
      }
    }
    if (cooldownMs > 0 && moved !== undefined && now !== undefined) {
      const t: unknown = moved[key];
      if (typeof t === 'number' && Number.isFinite(t) && now - t < cooldownMs) {
        locked[i] = 1;
        lockedCount++;
      }
    }
  }

  const share = new Float64Array(m);
  for (let d = 0; d < m; d++) share[d] = capTotal > 0 ? (total * capacity[d]) / capTotal : 0;
  const { target, pinned, dedicated } =
    strategy === 'sticky-balanced'
      ? dedicate({ n, m, weight, capacity, prevOwner, total, capTotal, share })
      : { target: share, pinned: new Int32Array(n).fill(-1), dedicated: new Uint8Array(m) };

  return {
    strategy,
    mode: options.mode ?? 'balance',
    tolerance: options.tolerance ?? 0.05,
    maxChambers,
    cooldownMs,
    now,
    n,
    keys,
    weight,
    m,
    ids,
    capacity,
    uniformCapacity,
    prevOwner,
    orphanFrom,
    locked,
    lockedCount,
    totalWeight: total,
    share,
    target,
    pinned,
    dedicated,
    maxWeight,
  };
}

/**
 * Gives each chamber heavier than its defender's share of the rest a defender of its own, heaviest
 * first: its previous owner when live, else the free defender with the least kept weight per
 * capacity (ties: lowest index). Stops when a chamber fits a share or one free defender is left.
 * The free defenders' targets split what is left by capacity.
 */
function dedicate(q: {
  n: number;
  m: number;
  weight: Float64Array;
  capacity: Float64Array;
  prevOwner: Int32Array;
  total: number;
  capTotal: number;
  share: Float64Array;
}): { target: Float64Array; pinned: Int32Array; dedicated: Uint8Array } {
  const { n, m, weight, capacity, prevOwner } = q;
  const pinned = new Int32Array(n).fill(-1);
  const dedicated = new Uint8Array(m);
  // Fast exit (the common case): no chamber exceeds the smallest share.
  let minShare = Number.POSITIVE_INFINITY;
  for (let d = 0; d < m; d++) minShare = Math.min(minShare, q.share[d]);
  let heaviest = 0;
  for (let i = 0; i < n; i++) heaviest = Math.max(heaviest, weight[i]);
  if (m < 2 || !(heaviest > minShare)) return { target: q.share, pinned, dedicated };

  const kept = new Float64Array(m);
  for (let i = 0; i < n; i++) if (prevOwner[i] >= 0) kept[prevOwner[i]] += weight[i];
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => weight[b] - weight[a] || a - b);
  let rest = q.total;
  let restCap = q.capTotal;
  let free = m;
  for (const i of order) {
    if (free <= 1) break;
    let d = prevOwner[i] >= 0 && dedicated[prevOwner[i]] === 0 ? prevOwner[i] : -1;
    if (d < 0) {
      for (let e = 0; e < m; e++) {
        if (dedicated[e] === 1) continue;
        if (d < 0 || kept[e] / capacity[e] < kept[d] / capacity[d]) d = e;
      }
    }
    if (!(weight[i] > (rest * capacity[d]) / restCap)) break;
    pinned[i] = d;
    dedicated[d] = 1;
    rest -= weight[i];
    restCap -= capacity[d];
    free--;
  }
  if (free === m) return { target: q.share, pinned, dedicated };
  const target = new Float64Array(m);
  for (let i = 0; i < n; i++) if (pinned[i] >= 0) target[pinned[i]] = weight[i];
  for (let d = 0; d < m; d++) if (dedicated[d] === 0) target[d] = (Math.max(0, rest) * capacity[d]) / restCap;
  return { target, pinned, dedicated };
}
