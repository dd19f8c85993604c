import { seededRandom, type UniformRandom } from '@defender/hashing';

// Module-level references: hot loops then skip a global lookup per call (which is slow where code
// runs in a vm context, as under Jest).
const { floor, imul, log, sqrt } = Math;

/** A uniform [0, 1) generator. */
export type Rng = UniformRandom;

/** Deterministic uniform [0, 1) generator (the workspace's seededRandom, mulberry32): the same seed gives the same fab and runs. */
export const rng: (seed: number) => Rng = seededRandom;

/** Mixes integers into a 32-bit seed (for per-chamber, per-run streams that do not depend on order). */
export function mix(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = imul(h ^ (p >>> 0), 0x01000193) >>> 0;
    h = imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
    h ^= h >>> 12;
  }
  return h >>> 0;
}

/** Standard normal deviates (polar Box-Muller, both values used). */
export class Gaussian {
  private spare: number | undefined;

  constructor(private readonly u: Rng) {}

  next(): number {
    const s = this.spare;
    if (s !== undefined) {
      this.spare = undefined;
      return s;
    }
    let x: number;
    let y: number;
    let r: number;
    do {
      x = 2 * this.u() - 1;
      y = 2 * this.u() - 1;
      r = x * x + y * y;
    } while (r >= 1 || r === 0);
    const f = sqrt((-2 * log(r)) / r);
    this.spare = y * f;
    return x * f;
  }
}

/** An integer in [lo, hi]. */
export function intIn(u: Rng, lo: number, hi: number): number {
  return lo + floor(u() * (hi - lo + 1));
}

/** One of `items`, by `weights` (same length, non-negative, not all 0). */
export function pick<T>(u: Rng, items: readonly T[], weights?: readonly number[]): T {
  if (items.length === 0) throw new RangeError('pick() from an empty list');
  if (!weights) return items[floor(u() * items.length)] as T;
  const total = weights.reduce((a, b) => a + b, 0);
  let x = u() * total;
  for (let i = 0; i < items.length; i++) {
    x -= weights[i] ?? 0;
    if (x < 0) return items[i] as T;
  }
  return items[items.length - 1] as T;
}
