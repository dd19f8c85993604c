/**
 * d2 for moving ranges of two consecutive points: E[|X1 - X2|] / sigma = 2 / sqrt(pi) = 1.1284,
 * tabulated and used to three decimals (Montgomery; NIST/SEMATECH e-Handbook 6.3.2; R qcc).
 */
export const D2_MOVING_RANGE = 1.128;

// Lanczos approximation (g = 7, 9 coefficients), relative error below 1e-15 for x > 0.
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** Natural log of the gamma function for x > 0. */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  const z = x - 1;
  let a = LANCZOS[0];
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += LANCZOS[i] / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/**
 * c4(n) = E[s] / sigma for a normal sample of size n >= 2: sqrt(2 / (n - 1)) Gamma(n/2) / Gamma((n-1)/2).
 * Dividing the sample sd by c4 makes it unbiased.
 */
export function c4(n: number): number {
  if (!(Number.isInteger(n) && n >= 2)) return NaN;
  return Math.sqrt(2 / (n - 1)) * Math.exp(logGamma(n / 2) - logGamma((n - 1) / 2));
}
