/**
 * What the previous run of a recipe carried to the next one: the Phase I and judged-run counts, the
 * MEWMA vector and the adaptive centre. Read from the recipe's stored {@link MonitorState}; for a
 * chamber monitored before the state was stored, rebuilt once from the newest model point in the
 * history, where the earlier release kept it (chart entries of the model's point, level points), and
 * then committed as a state with the run.
 */
import type { MonitorState, RunPointSet, UChartPoint } from '@defender/contracts';
import { MonitorStateMissingError } from './errors';
import { POINT_FLAGS } from './flags';

/** What a run of a recipe starts from. */
export interface CarriedMemory {
  /** `state`: the stored state; `history`: an earlier release's points; `none`: the recipe's first run. */
  readonly source: 'state' | 'history' | 'none';
  /** Phase I runs of model version `version` before this run (0: none); undefined when the history does not say. */
  phaseOneRuns(version: number): number | undefined;
  /** Runs judged by model `version` before this run (0: none); undefined when the history does not say. */
  judgedRuns(version: number): number | undefined;
  /** The judged-run count before which the Phase I extension of `version` cannot be due, if one was left. */
  extensionCheckAt(version: number): number | undefined;
  /** The MEWMA vector model `version` left (of `dimensions` entries), or null to start afresh. */
  mewma(version: number, dimensions: number): readonly number[] | null;
  /** Each SVID's level offset model `version` left (empty: start at the Phase I mean). */
  levelOffsets(version: number, svids: readonly string[]): ReadonlyMap<string, number>;
  /** Re-centring of model `version` after an equipment event (undefined: none going on). */
  recentre(version: number): { readonly runs: number; readonly seen: number } | undefined;
  /** The indicators' centre offsets events left to model `version` (of `variables` entries), or undefined. */
  centre(version: number, variables: number): readonly number[] | undefined;
}

const NOTHING: CarriedMemory = {
  source: 'none',
  phaseOneRuns: () => 0,
  judgedRuns: () => 0,
  extensionCheckAt: () => undefined,
  mewma: () => null,
  levelOffsets: () => new Map(),
  recentre: () => undefined,
  centre: () => undefined,
};

/** The memory a stored state carries. */
export function memoryOfState(state: MonitorState): CarriedMemory {
  const judging = (version: number) => (state.phase === 'judging' && state.modelVersion === version ? state : undefined);
  return {
    source: 'state',
    phaseOneRuns: (version) => (state.phase === 'collecting' && state.modelVersion === version ? state.runs : 0),
    judgedRuns: (version) => judging(version)?.judgedRuns ?? 0,
    extensionCheckAt: (version) => judging(version)?.extensionCheckAt ?? undefined,
    mewma: (version, dimensions) => {
      const z = judging(version)?.mewma;
      return z && z.length === dimensions ? z : null;
    },
    levelOffsets: (version, svids) => {
      const offsets = judging(version)?.levelOffsets;
      const out = new Map<string, number>();
      if (offsets) for (const svid of svids) if (Object.prototype.hasOwnProperty.call(offsets, svid)) out.set(svid, offsets[svid] as number);
      return out;
    },
    recentre: (version) => judging(version)?.recentre,
    centre: (version, variables) => {
      const c = judging(version)?.centre;
      return c && c.length === variables ? c : undefined;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// An earlier release's memory, in the points of the newest run of the recipe
// ---------------------------------------------------------------------------------------------

/** The model's point among a run's points (written last, so searched from the end). */
function modelPointIn(points: readonly UChartPoint[], modelKey: string): UChartPoint | undefined {
  for (let i = points.length - 1; i >= 0; i--) {
    const p = points[i] as UChartPoint;
    if (p.indicatorKey === modelKey) return p;
  }
  return undefined;
}

/**
 * Chart entries of the model's point in which an earlier release carried counts from run to run (a
 * Phase I point: the recipe's Phase I runs so far; a judged point: the runs judged by its model
 * version so far, both including its own run). Read only to convert such a chamber.
 */
export const MONITOR_COUNT_KEYS = { phaseOneRuns: 'phaseOneRuns', judgedRuns: 'judgedRuns', extensionCheckAt: 'extensionCheckAt' } as const;

/** A count `p`'s model point carries in its chart (a positive integer), or undefined. */
function chartCount(p: UChartPoint, key: (typeof MONITOR_COUNT_KEYS)[keyof typeof MONITOR_COUNT_KEYS]): number | undefined {
  const n = p.chart?.[key];
  return n !== undefined && Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/** Store key suffix under which an earlier release stored an SVID's level offset, a point of every judged run. */
export function legacyLevelKey(svid: string): string {
  return `m/${svid}@*:offset`;
}

/**
 * The points of history runs, each decoded at most once per evaluation (a cached run decodes its
 * points anew on every read of `points`, and a run of a chamber with a hundred sensors has thousands).
 */
export class DecodedHistory {
  private readonly decoded = new Map<RunPointSet, readonly UChartPoint[]>();

  points(set: RunPointSet): readonly UChartPoint[] {
    let pts = this.decoded.get(set);
    if (!pts) {
      pts = set.points;
      this.decoded.set(set, pts);
    }
    return pts;
  }

  modelPoint(set: RunPointSet, modelKey: string): UChartPoint | undefined {
    return modelPointIn(this.points(set), modelKey);
  }
}

/**
 * The memory an earlier release left in the history: the newest run of the recipe with a model point
 * (`none` when the history read holds none). `keyPrefix` is what the recipe's store keys start with.
 * @throws {@link MonitorStateMissingError} when that run kept its memory in a state record instead.
 */
export function memoryOfHistory(
  history: readonly RunPointSet[],
  recipe: string | undefined,
  modelKey: string,
  keyPrefix: string,
  decoded: DecodedHistory,
): CarriedMemory {
  let prev: { set: RunPointSet; point: UChartPoint } | undefined;
  for (let i = history.length - 1; i >= 0 && !prev; i--) {
    const set = history[i] as RunPointSet;
    if (recipe !== undefined && set.recipe !== undefined && set.recipe !== recipe) continue;
    const point = decoded.modelPoint(set, modelKey);
    if (point) prev = { set, point };
  }
  if (!prev) return NOTHING;
  const { set, point } = prev;
  if ((point.flags & POINT_FLAGS.MEMORY_IN_STATE) !== 0) throw new MonitorStateMissingError(recipe, set.sequence);
  return {
    source: 'history',
    phaseOneRuns: () => (point.limitsVersion !== undefined ? 0 : chartCount(point, MONITOR_COUNT_KEYS.phaseOneRuns)),
    judgedRuns: (version) => (point.limitsVersion !== version ? 0 : chartCount(point, MONITOR_COUNT_KEYS.judgedRuns)),
    extensionCheckAt: (version) => (point.limitsVersion === version ? chartCount(point, MONITOR_COUNT_KEYS.extensionCheckAt) : undefined),
    mewma: (version, dimensions) => {
      if (point.limitsVersion !== version || !point.chart) return null;
      return Array.from({ length: dimensions }, (_, a) => point.chart?.[`z${a}`] ?? 0);
    },
    levelOffsets: (version, svids) => {
      const out = new Map<string, number>();
      if (point.limitsVersion !== version) return out;
      const wanted = new Map(svids.map((svid) => [keyPrefix + legacyLevelKey(svid), svid]));
      for (const p of decoded.points(set)) {
        const svid = wanted.get(p.indicatorKey);
        if (svid !== undefined && Number.isFinite(p.value)) out.set(svid, p.value);
      }
      return out;
    },
    recentre: () => undefined,
    centre: () => undefined,
  };
}

/** Runs of `recipe` judged by model `version` in a history (points stored before the counts were). */
export function judgedRunsInHistory(history: readonly RunPointSet[], recipe: string | undefined, modelKey: string, version: number, decoded: DecodedHistory): number {
  let n = 0;
  for (const s of history) {
    if (recipe !== undefined && s.recipe !== undefined && s.recipe !== recipe) continue;
    if (decoded.modelPoint(s, modelKey)?.limitsVersion === version) n++;
  }
  return n;
}
