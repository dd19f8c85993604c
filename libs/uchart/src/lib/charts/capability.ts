import { ChartConfigError } from '../errors';
import { chiSquareQuantile, normalQuantile, normalTails } from '../distributions';

/** Specification limits of one indicator; at least one of `lsl` / `usl`. */
export interface SpecLimits {
  readonly lsl?: number;
  readonly usl?: number;
  /** Target for Cpm / Ppm (default: the midpoint of two-sided limits, as qcc). */
  readonly target?: number;
}

/** A capability index with its confidence interval. */
export interface CapabilityIndex {
  readonly value: number;
  readonly lower: number;
  readonly upper: number;
}

/**
 * Capability of one indicator, as R qcc's `processCapability` (ex `process.capability`). Indices that
 * need a missing spec limit are `undefined`: Cp, Cpm, Pp, Ppm need both; Cpl / Ppl the LSL; Cpu / Ppu
 * the USL; Cpk / Ppk is the smaller of the one-sided indices that exist.
 */
export interface ProcessCapability {
  /** Number of values. */
  readonly n: number;
  readonly center: number;
  /** Within (short-term) sigma: from the chart (R-bar / d2, s-bar / c4, MR-bar / 1.128). */
  readonly sigmaWithin: number;
  /** Overall (long-term) sigma: the sample standard deviation (n - 1) of all values. */
  readonly sigmaOverall: number;
  readonly lsl?: number;
  readonly usl?: number;
  /** Target used for Cpm / Ppm; undefined when none applies (one-sided limits, no target given). */
  readonly target?: number;
  readonly nSigma: number;
  readonly confidenceLevel: number;
  readonly cp?: CapabilityIndex;
  readonly cpl?: CapabilityIndex;
  readonly cpu?: CapabilityIndex;
  readonly cpk: CapabilityIndex;
  readonly cpm?: CapabilityIndex;
  readonly pp?: CapabilityIndex;
  readonly ppl?: CapabilityIndex;
  readonly ppu?: CapabilityIndex;
  readonly ppk: CapabilityIndex;
  readonly ppm?: CapabilityIndex;
  /** Expected fractions beyond the limits under normality with (center, sigmaWithin). */
  readonly expectedBelowLsl?: number;
  readonly expectedAboveUsl?: number;
  /** Observed fractions strictly beyond the limits. */
  readonly observedBelowLsl?: number;
  readonly observedAboveUsl?: number;
}

/** Options of {@link processCapability}. */
export interface CapabilityOptions {
  /** Within sigma, from the chart's Phase I estimate. */
  readonly sigmaWithin: number;
  /** Process centre (default: the mean of the values, which is qcc's chart centre). */
  readonly center?: number;
  /** Half-width of the natural tolerance in sigmas (default 3). */
  readonly nSigma?: number;
  /** Two-sided confidence level of the intervals (default 0.95). */
  readonly confidenceLevel?: number;
}

/** Chou, Owen & Borrego (1990): Cp * sqrt(chi2_{alpha/2, df} / df) .. Cp * sqrt(chi2_{1-alpha/2, df} / df). */
function chiSquareInterval(value: number, df: number, alpha: number): CapabilityIndex {
  return {
    value,
    lower: value * Math.sqrt(chiSquareQuantile(alpha / 2, df) / df),
    upper: value * Math.sqrt(chiSquareQuantile(1 - alpha / 2, df) / df),
  };
}

/** Bissell (1990) normal approximation: idx (1 -/+ z sqrt(1 / (9 n idx^2) + 1 / (2 (n - 1)))). */
function waldInterval(value: number, z: number, n: number): CapabilityIndex {
  const half = z * Math.sqrt(1 / (9 * n * value * value) + 1 / (2 * (n - 1)));
  return { value, lower: value * (1 - half), upper: value * (1 + half) };
}

/**
 * Process capability indices of `values` (all Phase I observations) against spec limits:
 * Cp = (USL - LSL) / (2 k sigma), Cpl = (centre - LSL) / (k sigma), Cpu = (USL - centre) / (k sigma),
 * Cpk = min(Cpl, Cpu), Cpm = Cp / sqrt(1 + ((centre - target) / sigma)^2), with the within sigma for
 * the C indices and the overall sample sd for the P indices (k = nSigma = 3).
 *
 * Confidence intervals as qcc: chi-square for Cp / Pp (df n - 1) and Cpm / Ppm (Boyles' df
 * n (1 + d^2) / (1 + 2 d^2), d = (centre - target) / sigma); Bissell's normal approximation for
 * Cpk / Ppk with z = qnorm(1 - alpha / 2) and for Cpl / Cpu / Ppl / Ppu with z = qnorm(confidenceLevel).
 *
 * @throws {@link ChartConfigError} for fewer than 2 values, a non-finite value, no finite spec limit,
 *   LSL >= USL, sigmaWithin <= 0, a constant series (overall sd 0), nSigma <= 0 or a confidence level
 *   outside (0, 1).
 */
export function processCapability(
  values: ArrayLike<number>,
  spec: SpecLimits,
  options: CapabilityOptions,
): ProcessCapability {
  const n = values.length;
  if (n < 2) throw new ChartConfigError(`capability needs at least 2 values, got ${n}`);
  const lsl = spec.lsl !== undefined && Number.isFinite(spec.lsl) ? spec.lsl : undefined;
  const usl = spec.usl !== undefined && Number.isFinite(spec.usl) ? spec.usl : undefined;
  if (lsl === undefined && usl === undefined)
    throw new ChartConfigError('capability needs a finite LSL or USL');
  if (lsl !== undefined && usl !== undefined && !(lsl < usl))
    throw new ChartConfigError(`LSL must be below USL, got ${lsl} >= ${usl}`);
  const nSigma = options.nSigma ?? 3;
  if (!(nSigma > 0 && Number.isFinite(nSigma)))
    throw new ChartConfigError(`nSigma must be > 0, got ${nSigma}`);
  const level = options.confidenceLevel ?? 0.95;
  if (!(level > 0 && level < 1))
    throw new ChartConfigError(`confidenceLevel must be in (0, 1), got ${level}`);
  const sigmaW = options.sigmaWithin;
  if (!(sigmaW > 0 && Number.isFinite(sigmaW)))
    throw new ChartConfigError(`sigmaWithin must be > 0, got ${sigmaW}`);

  // Overall sd by shifted sums (exact for values near the first).
  const k0 = values[0];
  let s1 = 0;
  let s2 = 0;
  let below = 0;
  let above = 0;
  for (let i = 0; i < n; i++) {
    const x = values[i];
    if (!Number.isFinite(x)) throw new ChartConfigError(`value ${i} is not finite (${x})`);
    const d = x - k0;
    s1 += d;
    s2 += d * d;
    if (lsl !== undefined && x < lsl) below++;
    if (usl !== undefined && x > usl) above++;
  }
  const mean = k0 + s1 / n;
  const sigmaO = Math.sqrt(Math.max(0, (s2 - (s1 * s1) / n) / (n - 1)));
  if (!(sigmaO > 0))
    throw new ChartConfigError('capability of a constant series is undefined (overall sd 0)');
  const center = options.center ?? mean;
  if (!Number.isFinite(center)) throw new ChartConfigError(`center must be finite, got ${center}`);
  const twoSided = lsl !== undefined && usl !== undefined;
  const target = spec.target ?? (twoSided ? (lsl + usl) / 2 : undefined);

  const alpha = 1 - level;
  const zOneSided = normalQuantile(level);
  const zTwoSided = normalQuantile(1 - alpha / 2);

  const family = (sigma: number) => {
    const p = twoSided ? chiSquareInterval((usl - lsl) / (2 * nSigma * sigma), n - 1, alpha) : undefined;
    const pl = lsl !== undefined ? waldInterval((center - lsl) / (nSigma * sigma), zOneSided, n) : undefined;
    const pu = usl !== undefined ? waldInterval((usl - center) / (nSigma * sigma), zOneSided, n) : undefined;
    const minOneSided = Math.min(pl?.value ?? Infinity, pu?.value ?? Infinity);
    const pk = waldInterval(minOneSided, zTwoSided, n);
    let pm: CapabilityIndex | undefined;
    if (p && target !== undefined) {
      const dev = (center - target) / sigma;
      const df = (n * (1 + dev * dev)) / (1 + 2 * dev * dev);
      pm = chiSquareInterval(p.value / Math.sqrt(1 + dev * dev), df, alpha);
    }
    return { p, pl, pu, pk, pm };
  };
  const within = family(sigmaW);
  const overall = family(sigmaO);

  const result: ProcessCapability = {
    n,
    center,
    sigmaWithin: sigmaW,
    sigmaOverall: sigmaO,
    ...(lsl !== undefined ? { lsl } : {}),
    ...(usl !== undefined ? { usl } : {}),
    ...(target !== undefined ? { target } : {}),
    nSigma,
    confidenceLevel: level,
    ...(within.p ? { cp: within.p } : {}),
    ...(within.pl ? { cpl: within.pl } : {}),
    ...(within.pu ? { cpu: within.pu } : {}),
    cpk: within.pk,
    ...(within.pm ? { cpm: within.pm } : {}),
    ...(overall.p ? { pp: overall.p } : {}),
    ...(overall.pl ? { ppl: overall.pl } : {}),
    ...(overall.pu ? { ppu: overall.pu } : {}),
    ppk: overall.pk,
    ...(overall.pm ? { ppm: overall.pm } : {}),
    ...(lsl !== undefined
      ? { expectedBelowLsl: normalTails((lsl - center) / sigmaW)[0], observedBelowLsl: below / n }
      : {}),
    ...(usl !== undefined
      ? { expectedAboveUsl: normalTails((usl - center) / sigmaW)[1], observedAboveUsl: above / n }
      : {}),
  };
  return Object.freeze(result);
}
