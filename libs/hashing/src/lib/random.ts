// Module-level references: generators run in hot loops (fab simulation, property tests), and a
// global `Math` lookup per call is slow where code runs in a vm context, as under Jest.
const { cos, imul, log, PI, sqrt } = Math;

/** A uniform source in [0, 1), like `Math.random`; inject a {@link seededRandom} for reproducible runs. */
export type UniformRandom = () => number;

/**
 * A seeded uniform [0, 1) generator (mulberry32: 32-bit state, period 2^32, multiples of 2^-32).
 * The same seed gives the same stream on every machine and Node version; the seed is taken modulo
 * 2^32 (`seed >>> 0`), so seeds that differ by 2^32, or a negative seed and its unsigned value,
 * give the same stream. Not for anything secret.
 */
export function seededRandom(seed: number): UniformRandom {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = imul(t ^ (t >>> 15), t | 1);
    t ^= t + imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A standard normal deviate (mean 0, sd 1) from two draws of `u` (Box-Muller, cosine branch):
 * `sqrt(-2 ln(1 - u1)) * cos(2 pi u2)`. `1 - u1` lies in (0, 1] for u1 in [0, 1), so the result
 * is always finite.
 */
export function normalDeviate(u: UniformRandom): number {
  return sqrt(-2 * log(1 - u())) * cos(2 * PI * u());
}
