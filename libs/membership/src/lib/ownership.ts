import { type AssignmentMap, defenderNumberOf } from '@defender/contracts';

/** Chambers `defenderId` owns in `map`, sorted. */
export function ownedChambers(map: Pick<AssignmentMap, 'assignments'>, defenderId: string): string[] {
  const out: string[] = [];
  for (const [chamber, owner] of Object.entries(map.assignments)) if (owner === defenderId) out.push(chamber);
  return out.sort();
}

/** The lowest defender ID of a map (by number): it dead-letters runs of chambers no defender owns. */
export function lowestDefenderId(defenderInfo: Pick<AssignmentMap, 'defenderInfo'>['defenderInfo']): string | undefined {
  let lowest: string | undefined;
  let lowestN = Number.POSITIVE_INFINITY;
  for (const id of Object.keys(defenderInfo)) {
    const n = defenderNumberOf(id) ?? 0;
    if (n < lowestN) {
      lowest = id;
      lowestN = n;
    }
  }
  return lowest;
}

/**
 * What `defenderId` reads of each assignment map (ADR 0009): only the chunks holding its own
 * chambers (its ID), or the whole map (null) when it is the map's lowest defender, which needs every
 * chamber of the map to tell an unknown chamber's runs from an owned one's.
 */
export function defenderMapScope(defenderId: string): (head: Pick<AssignmentMap, 'defenderInfo'>) => string | null {
  return (head) => (lowestDefenderId(head.defenderInfo) === defenderId ? null : defenderId);
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
