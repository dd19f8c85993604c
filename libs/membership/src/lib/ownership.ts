import type { AssignmentMap } from '@defender/contracts';

/** Chambers `defenderId` owns in `map`, sorted. */
export function ownedChambers(map: Pick<AssignmentMap, 'assignments'>, defenderId: string): string[] {
  const out: string[] = [];
  for (const [chamber, owner] of Object.entries(map.assignments)) if (owner === defenderId) out.push(chamber);
  return out.sort();
}

/** What a defender must release and take when its owned set changes; both sorted. */
export interface OwnershipDiff {
  readonly added: string[];
  readonly removed: string[];
}

export function diffOwnership(previous: Iterable<string>, next: Iterable<string>): OwnershipDiff {
  const prev = new Set(previous);
  const nxt = new Set(next);
  return {
    added: [...nxt].filter((c) => !prev.has(c)).sort(),
    removed: [...prev].filter((c) => !nxt.has(c)).sort(),
  };
}
