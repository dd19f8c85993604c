import { seededRandom } from '@defender/hashing';
import type { ChamberInput, DefenderInput } from '../index';

export const MIN_WEIGHT = 30_000;
export const MAX_WEIGHT = 3_600_000;

/** Log-uniform integer weight in [30 K, 3.6 M] from a uniform u in [0, 1). */
export function logUniformWeight(u: number): number {
  return Math.round(Math.exp(Math.log(MIN_WEIGHT) + u * Math.log(MAX_WEIGHT / MIN_WEIGHT)));
}

/** `n` chambers keyed like a fab (`tool0001:chamber3`, 4 chambers per tool), log-uniform weights. */
export function fab(n: number, seed: number): ChamberInput[] {
  const rnd = seededRandom(seed);
  return Array.from({ length: n }, (_, i) => ({
    key: `tool${String(Math.floor(i / 4)).padStart(4, '0')}:chamber${(i % 4) + 1}`,
    weight: logUniformWeight(rnd()),
  }));
}

/** Defenders `defender-<from>` .. `defender-<from + n - 1>`. */
export function defenders(n: number, from = 0): DefenderInput[] {
  return Array.from({ length: n }, (_, i) => ({ id: `defender-${from + i}` }));
}

/** Fisher-Yates shuffle with the given PRNG (a copy). */
export function shuffle<T>(items: readonly T[], rnd: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** Weight per defender id. */
export function loads(
  assignments: Record<string, string>,
  chambers: readonly ChamberInput[],
): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of chambers) {
    const owner = assignments[c.key] as string;
    out.set(owner, (out.get(owner) ?? 0) + c.weight);
  }
  return out;
}
