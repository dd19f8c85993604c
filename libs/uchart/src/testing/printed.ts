/**
 * Test support for the published-value specs (not part of the library: tsconfig.lib.json excludes
 * src/testing, and src/index.ts does not export it): compares a computed value with a number as a
 * source prints it.
 *
 * "To the printed digits" means |computed - printed| <= half a unit in the last printed place (with a
 * 1e-9 relative slack for binary rounding), i.e. the computed value rounds to the printed one (a value
 * exactly half-way may be printed either way).
 */

/** Digits after the decimal point of a printed number ('0.04812533' -> 8, '125' -> 0). */
export function printedDecimals(printed: string): number {
  const dot = printed.indexOf('.');
  return dot < 0 ? 0 : printed.length - dot - 1;
}

/** Half a unit in the last printed place. */
export function printedTolerance(printed: string): number {
  return 0.5 * 10 ** -printedDecimals(printed) * (1 + 1e-9);
}

/** Null when `actual` prints as `printed`, else a message with both and the difference. */
export function printedMismatch(actual: number, printed: string): string | null {
  const diff = Math.abs(actual - Number(printed));
  return diff <= printedTolerance(printed)
    ? null
    : `computed ${actual} does not print as ${printed} (|diff| = ${diff})`;
}

/** Asserts that `actual` rounds to `printed` at its printed decimals (ties either way). */
export function expectPrinted(actual: number, printed: string): void {
  expect(printedMismatch(actual, printed)).toBeNull();
}

/**
 * Asserts that `actual` rounds to `printed` at the number of significant digits printed (R prints 7
 * significant digits by default, padding some columns with trailing zeros: '4.8400000').
 */
export function expectSignificant(actual: number, printed: string): void {
  const digits = printed.replace(/^-?0*\.?0*/, '').replace('.', '').length;
  const magnitude = Math.floor(Math.log10(Math.abs(Number(printed))));
  const tolerance = 0.5 * 10 ** (magnitude - digits + 1) * (1 + 1e-9);
  const diff = Math.abs(actual - Number(printed));
  expect(
    diff <= tolerance ? null : `computed ${actual} does not print as ${printed} (|diff| = ${diff})`,
  ).toBeNull();
}

/**
 * Asserts that `actual`, truncated (not rounded) to the printed decimals, equals `printed`: for sources
 * that visibly truncate.
 */
export function expectTruncated(actual: number, printed: string): void {
  const scale = 10 ** printedDecimals(printed);
  expect(Math.trunc(actual * scale) / scale).toBeCloseTo(Number(printed), printedDecimals(printed) + 2);
}

/** `x` rounded half away from zero to `decimals` places (a table's own rounding of its inputs). */
export function roundTo(x: number, decimals: number): number {
  const f = 10 ** decimals;
  return (Math.sign(x) * Math.round(Math.abs(x) * f)) / f;
}
