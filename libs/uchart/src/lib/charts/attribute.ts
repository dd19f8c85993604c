import { ChartConfigError } from '../errors';
import type { ShewhartLimits } from './individuals';

/**
 * Attribute charts:
 * - `p`: fraction nonconforming, count / size (size = units inspected);
 * - `np`: number nonconforming, count (size = units inspected);
 * - `c`: nonconformities per inspection unit, count (size ignored: a constant unit);
 * - `u`: nonconformities per unit of exposure, count / size (size = exposure, may vary per run).
 */
export type AttributeChartType = 'p' | 'np' | 'c' | 'u';

/** One run of an attribute chart. */
export interface AttributeSample {
  /** Nonconforming units (p, np) or nonconformities (c, u); >= 0. */
  readonly count: number;
  /** Units inspected (p, np; count <= size) or exposure (u); > 0. Ignored for c. */
  readonly size?: number;
}

function checkSample(type: AttributeChartType, s: AttributeSample, i: number): void {
  if (!(Number.isFinite(s.count) && s.count >= 0)) {
    throw new ChartConfigError(`${type} chart sample ${i}: count must be finite and >= 0, got ${s.count}`);
  }
  if (type === 'c') return;
  const size = s.size;
  if (size === undefined || !(Number.isFinite(size) && size > 0)) {
    throw new ChartConfigError(`${type} chart sample ${i}: size must be finite and > 0, got ${size}`);
  }
  if ((type === 'p' || type === 'np') && s.count > size) {
    throw new ChartConfigError(`${type} chart sample ${i}: count ${s.count} exceeds size ${size}`);
  }
}

/**
 * The in-control rate estimated from Phase I samples: p-bar = sum(count) / sum(size) for p and np,
 * c-bar = mean(count) for c, u-bar = sum(count) / sum(size) for u.
 *
 * @throws {@link ChartConfigError} for no samples or an invalid count / size.
 */
export function attributeRate(type: AttributeChartType, samples: readonly AttributeSample[]): number {
  if (samples.length === 0) throw new ChartConfigError(`${type} chart needs at least one sample`);
  let counts = 0;
  let sizes = 0;
  samples.forEach((s, i) => {
    checkSample(type, s, i);
    counts += s.count;
    sizes += type === 'c' ? 1 : (s.size as number);
  });
  return counts / sizes;
}

/** The charted statistic of one sample: count / size for p and u, count for np and c. */
export function attributeStatistic(type: AttributeChartType, sample: AttributeSample): number {
  checkSample(type, sample, 0);
  return type === 'p' || type === 'u' ? sample.count / (sample.size as number) : sample.count;
}

/**
 * Limits of one sample of size `size` given the in-control `rate`, in the charted statistic's unit:
 * - p: p +/- n sqrt(p (1 - p) / size), clamped to [0, 1];
 * - np: size p +/- n sqrt(size p (1 - p)), clamped to [0, size];
 * - c: c +/- n sqrt(c), LCL clamped at 0;
 * - u: u +/- n sqrt(u / size), LCL clamped at 0.
 *
 * @throws {@link ChartConfigError} for a rate outside its domain or a size <= 0 (p, np, u).
 */
export function attributeLimits(
  type: AttributeChartType,
  rate: number,
  size: number | undefined,
  nSigma = 3,
): ShewhartLimits {
  if (!(Number.isFinite(rate) && rate >= 0) || ((type === 'p' || type === 'np') && rate > 1)) {
    throw new ChartConfigError(`${type} chart rate out of range: ${rate}`);
  }
  const n = size ?? NaN;
  if (type !== 'c' && !(n > 0 && Number.isFinite(n)))
    throw new ChartConfigError(`${type} chart size must be > 0, got ${size}`);
  let center: number;
  let sigma: number;
  let upperBound = Infinity;
  switch (type) {
    case 'p':
      center = rate;
      sigma = Math.sqrt((rate * (1 - rate)) / n);
      upperBound = 1;
      break;
    case 'np':
      center = n * rate;
      sigma = Math.sqrt(n * rate * (1 - rate));
      upperBound = n;
      break;
    case 'c':
      center = rate;
      sigma = Math.sqrt(rate);
      break;
    case 'u':
      center = rate;
      sigma = Math.sqrt(rate / n);
      break;
  }
  return {
    center,
    sigma,
    nSigma,
    lcl: Math.max(0, center - nSigma * sigma),
    ucl: Math.min(upperBound, center + nSigma * sigma),
  };
}
