/**
 * Judging one run against a fitted monitor model: constant indicators that changed, univariate limits,
 * Hotelling T² and SPE with their largest contributions, residual limits and the MEWMA (monitor.ts has
 * the overview).
 */
import { scorePca } from '@defender/uchart';
import { CONSTANT_TOLERANCE, type MonitorModel } from './monitor';

/** A violation found by the monitor on one run. */
export interface MonitorViolation {
  /**
   * `T2`, `SPE`, `MEWMA` (the model), `LIMIT` (one indicator beyond its limits), `RESIDUAL` (one
   * indicator's PCA residual beyond its limit, in residual sds), `CONSTANT` (a constant indicator changed),
   * `REGIME` (the levels of many sensors moved together without an equipment event: the model is
   * re-centred from the next runs; value: how many sensors).
   */
  readonly rule: 'T2' | 'SPE' | 'MEWMA' | 'LIMIT' | 'RESIDUAL' | 'CONSTANT' | 'REGIME';
  /** The indicator (LIMIT, CONSTANT) or the model key. */
  readonly key: string;
  readonly value: number;
  readonly limit?: number;
  readonly lcl?: number;
  readonly ucl?: number;
  readonly center?: number;
  /** The indicators that drove a T² / SPE / MEWMA signal, largest first, with their share of the statistic. */
  readonly contributions?: readonly { readonly key: string; readonly share: number }[];
}

/** What the monitor says about one run. */
export interface MonitorScore {
  readonly t2: number | null;
  readonly spe: number | null;
  readonly mewma: number | null;
  /** MEWMA state after this run (standardised scores). */
  readonly mewmaState: readonly number[] | null;
  readonly violations: readonly MonitorViolation[];
  /** Charted indicators missing in this run (judged at their Phase I mean). */
  readonly missing: number;
}

const TOP_CONTRIBUTIONS = 5;

/**
 * A model's residual sd per kept PCA variable (NaN where none is charted), in the order of the
 * variables' residual contributions: what {@link scoreMonitorRun} scans a run's residuals with. A
 * caller that judges many runs with one model computes it once and passes it.
 */
export function residualSds(model: MonitorModel): Float64Array | null {
  const pca = model.pca;
  const scale = model.residual?.scale;
  if (!pca || !scale) return null;
  return Float64Array.from(pca.kept, (i) => {
    const sd = Object.prototype.hasOwnProperty.call(scale, pca.names[i] as string) ? scale[pca.names[i] as string] : undefined;
    return typeof sd === 'number' ? sd : NaN;
  });
}

function top(contribs: readonly { name: string; value: number }[], total: number) {
  return [...contribs]
    .sort((a, b) => b.value - a.value)
    .slice(0, TOP_CONTRIBUTIONS)
    .map((c) => ({ key: c.name, share: total > 0 ? c.value / total : 0 }));
}

/**
 * Judges one run's indicator values (by key) against the model, around `centre` (the adapted centre,
 * in `model.variables` order; default the Phase I mean). `residualSdsOfModel` is the model's
 * {@link residualSds}, computed here when not given.
 */
export function scoreMonitorRun(
  model: MonitorModel,
  values: ReadonlyMap<string, number>,
  modelKey: string,
  previousMewma: readonly number[] | null,
  centre: readonly number[] = model.center,
  residualSdsOfModel: Float64Array | null = residualSds(model),
): MonitorScore {
  const violations: MonitorViolation[] = [];
  for (const nc of model.notCharted) {
    if (nc.reason !== 'constant' || nc.value === undefined) continue;
    const v = values.get(nc.key);
    if (v === undefined || !Number.isFinite(v)) continue;
    const tolerance = Math.max(CONSTANT_TOLERANCE * Math.max(1, Math.abs(nc.value)), (nc.tolerance ?? 0) * (1 + CONSTANT_TOLERANCE));
    if (Math.abs(v - nc.value) > tolerance) {
      violations.push({ rule: 'CONSTANT', key: nc.key, value: v, center: nc.value });
    }
  }
  let missing = 0;
  model.variables.forEach((key, j) => {
    const v = values.get(key);
    if (v === undefined || !Number.isFinite(v)) {
      missing++;
      return;
    }
    const c = centre[j] as number;
    const s = model.scale[j] as number;
    if (model.univariateWidth > 0 && Math.abs(v - c) > model.univariateWidth * s) {
      violations.push({
        rule: 'LIMIT',
        key,
        value: v,
        center: c,
        lcl: c - model.univariateWidth * s,
        ucl: c + model.univariateWidth * s,
      });
    }
  });
  let t2: number | null = null;
  let spe: number | null = null;
  let mewma: number | null = null;
  let mewmaState: number[] | null = null;
  if (model.pca) {
    const pca = model.pca;
    // The PCA model centres on the Phase I mean: shift the run by how far the centre has moved.
    const shift = new Map(model.variables.map((k, j) => [k, (centre[j] as number) - (model.center[j] as number)]));
    const x = pca.names.map((key) => (values.get(key) ?? NaN) - (shift.get(key) ?? 0));
    const s = scorePca(pca, x);
    t2 = s.t2;
    spe = s.spe;
    if (s.t2Exceeded)
      violations.push({ rule: 'T2', key: modelKey, value: s.t2, limit: s.t2Limit, contributions: top(s.contributions.t2, s.t2) });
    if (s.speExceeded)
      violations.push({ rule: 'SPE', key: modelKey, value: s.spe, limit: s.speLimit, contributions: top(s.contributions.spe, s.spe) });
    if (model.residual) {
      const { width, scale } = model.residual;
      // Scanned in model order; only a run with a residual past its limit sorts its contributions,
      // so its violations are listed largest first.
      const sdOf = residualSdsOfModel ?? new Float64Array(pca.kept.length).fill(NaN);
      const spe = s.contributionValues.spe;
      let exceeded = false;
      for (let c = 0; c < spe.length && !exceeded; c++) exceeded = Math.sqrt(spe[c] as number) / (sdOf[c] as number) > width;
      if (exceeded) {
        for (const c of s.contributions.spe) {
          const sd = scale[c.name];
          if (sd === undefined) continue;
          const r = Math.sqrt(c.value) / sd;
          if (r > width) violations.push({ rule: 'RESIDUAL', key: c.name, value: r, limit: width });
        }
      }
    }
    if (model.mewma) {
      const { lambda, limit, scoreScale } = model.mewma;
      const prev = previousMewma && previousMewma.length === scoreScale.length ? previousMewma : null;
      mewmaState = scoreScale.map((sc, a) => lambda * ((s.scores[a] as number) / sc) + (1 - lambda) * (prev?.[a] ?? 0));
      let q = 0;
      for (const z of mewmaState) q += z * z;
      mewma = (q * (2 - lambda)) / lambda;
      if (mewma > limit) {
        // Which indicators the smoothed shift points at: its direction mapped back through the loadings.
        const dir = pca.kept.map((_, j) => {
          let d = 0;
          mewmaState?.forEach((z, a) => (d += z * (scoreScale[a] as number) * (pca.loadings[a]?.[j] ?? 0)));
          return d * d;
        });
        const total = dir.reduce((a, b) => a + b, 0);
        const contribs = dir.map((value, j) => ({ name: pca.names[pca.kept[j] as number] as string, value }));
        violations.push({ rule: 'MEWMA', key: modelKey, value: mewma, limit, contributions: top(contribs, total) });
      }
    }
  }
  return { t2, spe, mewma, mewmaState, violations, missing };
}
