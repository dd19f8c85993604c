/**
 * Data of the published examples that several specs reproduce, each transcribed once: R qcc's data sets
 * (github.com/luca-scr/qcc, data/ at commit af35099) and Montgomery & Runger's concentration series.
 * Test support, not part of the library (tsconfig.lib.json excludes src/testing).
 */

// qcc data/pistonrings.txt, one row per sample: Montgomery's piston-ring inside diameters (Introduction
// to SQC, Example 6.1 / Table 6.3), 40 samples of 5; samples 1-25 are the trial (Phase I) samples.
// prettier-ignore
export const PISTONRINGS: readonly number[][] = [
  [74.030, 74.002, 74.019, 73.992, 74.008], [73.995, 73.992, 74.001, 74.011, 74.004],
  [73.988, 74.024, 74.021, 74.005, 74.002], [74.002, 73.996, 73.993, 74.015, 74.009],
  [73.992, 74.007, 74.015, 73.989, 74.014], [74.009, 73.994, 73.997, 73.985, 73.993],
  [73.995, 74.006, 73.994, 74.000, 74.005], [73.985, 74.003, 73.993, 74.015, 73.988],
  [74.008, 73.995, 74.009, 74.005, 74.004], [73.998, 74.000, 73.990, 74.007, 73.995],
  [73.994, 73.998, 73.994, 73.995, 73.990], [74.004, 74.000, 74.007, 74.000, 73.996],
  [73.983, 74.002, 73.998, 73.997, 74.012], [74.006, 73.967, 73.994, 74.000, 73.984],
  [74.012, 74.014, 73.998, 73.999, 74.007], [74.000, 73.984, 74.005, 73.998, 73.996],
  [73.994, 74.012, 73.986, 74.005, 74.007], [74.006, 74.010, 74.018, 74.003, 74.000],
  [73.984, 74.002, 74.003, 74.005, 73.997], [74.000, 74.010, 74.013, 74.020, 74.003],
  [73.988, 74.001, 74.009, 74.005, 73.996], [74.004, 73.999, 73.990, 74.006, 74.009],
  [74.010, 73.989, 73.990, 74.009, 74.014], [74.015, 74.008, 73.993, 74.000, 74.010],
  [73.982, 73.984, 73.995, 74.017, 74.013], [74.012, 74.015, 74.030, 73.986, 74.000],
  [73.995, 74.010, 73.990, 74.015, 74.001], [73.987, 73.999, 73.985, 74.000, 73.990],
  [74.008, 74.010, 74.003, 73.991, 74.006], [74.003, 74.000, 74.001, 73.986, 73.997],
  [73.994, 74.003, 74.015, 74.020, 74.004], [74.008, 74.002, 74.018, 73.995, 74.005],
  [74.001, 74.004, 73.990, 73.996, 73.998], [74.015, 74.000, 74.016, 74.025, 74.000],
  [74.030, 74.005, 74.000, 74.016, 74.012], [74.001, 73.990, 73.995, 74.010, 74.024],
  [74.015, 74.020, 74.024, 74.005, 74.019], [74.035, 74.010, 74.012, 74.015, 74.026],
  [74.017, 74.013, 74.036, 74.025, 74.026], [74.010, 74.005, 74.029, 74.000, 74.020],
];

/** qcc's diameter2: the rings at (1-based, row-major) positions `out` removed, regrouped by sample. */
export function withoutRings(out: readonly number[]): number[][] {
  const drop = new Set(out.map((i) => i - 1));
  return PISTONRINGS.map((row, s) => row.filter((_, j) => !drop.has(5 * s + j)));
}
/** The vignette's diameter2 (Montgomery Table 6.4): 12 rings removed, sizes 3, 4 and 5. */
export const DIAMETER2 = withoutRings([9, 10, 30, 35, 45, 64, 65, 74, 75, 85, 99, 100]);

// qcc data/boiler.txt: t1..t8.
export const BOILER_NAMES = ['t1', 't2', 't3', 't4', 't5', 't6', 't7', 't8'];
// prettier-ignore
export const BOILER: readonly (readonly number[])[] = [
  [507, 516, 527, 516, 499, 512, 472, 477], [512, 513, 533, 518, 502, 510, 476, 475],
  [520, 512, 537, 518, 503, 512, 480, 477], [520, 514, 538, 516, 504, 517, 480, 479],
  [530, 515, 542, 525, 504, 512, 481, 477], [528, 516, 541, 524, 505, 514, 482, 480],
  [522, 513, 537, 518, 503, 512, 479, 477], [527, 509, 537, 521, 504, 508, 478, 472],
  [533, 514, 528, 529, 508, 512, 482, 477], [530, 512, 538, 524, 507, 512, 482, 477],
  [530, 512, 541, 525, 507, 511, 482, 476], [527, 513, 541, 523, 506, 512, 481, 476],
  [529, 514, 542, 525, 506, 512, 481, 477], [522, 509, 539, 518, 501, 510, 476, 475],
  [532, 515, 545, 528, 507, 511, 481, 478], [531, 514, 543, 525, 507, 511, 482, 477],
  [535, 514, 542, 530, 509, 511, 483, 477], [516, 515, 537, 515, 501, 516, 476, 481],
  [514, 510, 532, 512, 497, 512, 471, 476], [536, 512, 540, 526, 509, 512, 482, 477],
  [522, 514, 540, 518, 497, 514, 475, 478], [520, 514, 540, 518, 501, 514, 475, 478],
  [526, 517, 546, 522, 502, 516, 477, 480], [527, 514, 543, 523, 502, 512, 475, 476],
  [529, 518, 544, 525, 504, 516, 479, 481],
];

// qcc data/RyanMultivar.R (Ryan, Statistical Methods for Quality Improvement, Table 9.2): 20 subgroups
// of 4 observations of two variables, X1 and X2, one m x n matrix per variable as qcc stores them.
// prettier-ignore
export const RYAN_X1: readonly (readonly number[])[] = [
  [72, 84, 79, 49], [56, 87, 33, 42], [55, 73, 22, 60], [44, 80, 54, 74], [97, 26, 48, 58],
  [83, 89, 91, 62], [47, 66, 53, 58], [88, 50, 84, 69], [57, 47, 41, 46], [26, 39, 52, 48],
  [46, 27, 63, 34], [49, 62, 78, 87], [71, 63, 82, 55], [71, 58, 69, 70], [67, 69, 70, 94],
  [55, 63, 72, 49], [49, 51, 55, 76], [72, 80, 61, 59], [61, 74, 62, 57], [35, 38, 41, 46],
];
// prettier-ignore
export const RYAN_X2: readonly (readonly number[])[] = [
  [23, 30, 28, 10], [14, 31, 8, 9], [13, 22, 6, 16], [9, 28, 15, 25], [36, 10, 14, 15],
  [30, 35, 36, 18], [12, 18, 14, 16], [31, 11, 30, 19], [14, 10, 8, 10], [7, 11, 35, 30],
  [10, 8, 19, 9], [11, 20, 27, 31], [22, 16, 31, 15], [21, 19, 17, 20], [18, 19, 18, 35],
  [15, 16, 20, 12], [13, 14, 16, 26], [22, 28, 18, 17], [19, 20, 16, 14], [10, 11, 13, 16],
];
/** RyanMultivar grouped by subgroup: RYAN_SUBGROUPS[k][i] = [X1, X2] of observation i of subgroup k. */
export const RYAN_SUBGROUPS: readonly (readonly (readonly number[])[])[] = RYAN_X1.map((row, k) =>
  row.map((x1, i) => [x1, RYAN_X2[k][i]]),
);

// qcc vignette, "Continuous one-at-time data": viscosity of an aircraft primer paint (data/viscosity.txt,
// trial samples; Montgomery, p. 242).
// prettier-ignore
export const VISCOSITY: readonly number[] = [
  33.75, 33.05, 34, 33.81, 33.46, 34.02, 33.68, 33.27, 33.49, 33.2, 33.62, 33.0, 33.54, 33.12, 33.84,
];

// qcc data/orangejuice.txt, trial samples 1-30: D nonconforming of 50 cans.
// prettier-ignore
export const ORANGEJUICE_D: readonly number[] = [
  12, 15, 8, 10, 4, 7, 16, 9, 14, 10, 5, 6, 17, 12, 22, 8, 10, 5, 13, 11, 20, 18, 24, 15, 9, 12, 7, 13, 9, 6,
];

// qcc data/circuit.txt: nonconformities in 100 printed circuit boards, trial samples 1-26.
// prettier-ignore
export const CIRCUIT: readonly number[] = [
  21, 24, 16, 12, 15, 5, 28, 20, 31, 25, 20, 24, 16, 19, 10, 17, 13, 22, 18, 39, 30, 24, 16, 19, 17, 15,
];

// qcc data/pcmanufact.txt: nonconformities in 20 samples of 5 personal computers.
// prettier-ignore
export const PCMANUFACT: readonly number[] = [10, 12, 8, 14, 10, 16, 11, 7, 10, 15, 9, 5, 7, 11, 12, 6, 8, 10, 7, 5];

// Montgomery & Runger, Applied Statistics and Probability for Engineers, Table 16-3: concentration of a
// chemical process, one observation per hour.
// prettier-ignore
export const CONCENTRATION: readonly number[] = [
  102.0, 94.8, 98.3, 98.4, 102.0, 98.5, 99.0, 97.7, 100.0, 98.1,
  101.3, 98.7, 101.1, 98.4, 97.0, 96.7, 100.3, 101.4, 97.2, 101.0,
];
