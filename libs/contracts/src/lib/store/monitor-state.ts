import { isValidId, type ChamberRef, type WrittenByRun } from './chamber';
import { InvalidRecordError, type RecordContext, type RecordIssue } from './errors';
import { checkedStoredRecord, parseStoredJson } from './stored-json';

/**
 * The chamber monitor's memory of one chamber and recipe between runs, as the newest committed run
 * left it: which phase the recipe is in, and what a judged run carries to the next (the MEWMA vector,
 * the adaptive centre, the counts that say when the Phase I extension is due). Written by
 * `commitRun` together with the run's points under the same owner-epoch fencing, so it is always the
 * state after the chamber's high-water mark; read by the run's owner instead of scanning history.
 *
 * A typed, versioned record: stored as the JSON of {@link MonitorState} with
 * {@link MONITOR_STATE_SCHEMA_VERSION}; a reader converts every older schema it knows on load and
 * refuses a newer one (`UnknownSchemaVersionError`).
 */
export type MonitorState = MonitorCollecting | MonitorJudging;

/** Phase I: runs collected for the model version `modelVersion` (1, or a re-baseline's version). */
export interface MonitorCollecting {
  readonly phase: 'collecting';
  readonly modelVersion: number;
  /**
   * Phase I runs so far, the run that wrote the state included (a refused fit keeps counting); 0 when
   * an equipment event wrote it (a re-baseline from the next run on).
   */
  readonly runs: number;
  /**
   * Phase I counts only runs after this store sequence (the equipment event that started it); absent:
   * the runs after the model's last judged run, or from the chamber's first.
   */
  readonly since?: number;
}

/** A model judges the recipe's runs. */
export interface MonitorJudging {
  readonly phase: 'judging';
  readonly modelVersion: number;
  /** Runs judged by this version so far, the run that wrote the state included. */
  readonly judgedRuns: number;
  /**
   * The judged-run count before which the Phase I extension cannot be due (each judged run adds at
   * most one usable run, one the monitor alarmed none), or null when it may be due now (a state written
   * before the bound was kept from the fit on) or never will (no extension).
   */
  readonly extensionCheckAt: number | null;
  /** MEWMA vector after the run (standardised scores), or null without a MEWMA chart. */
  readonly mewma: readonly number[] | null;
  /** The adaptive centre: each SVID's level offset from its Phase I mean, after the run. */
  readonly levelOffsets: Readonly<Record<string, number>>;
  /**
   * Re-centring after an equipment event (ADR 0019, `recentre`): `centre` is the mean of the `runs`
   * unalarmed runs since the event (0: none yet: the next run's own values are the first estimate),
   * judged with that mean's estimation error; `seen` counts every run since the event. Absent once
   * enough runs set the centre.
   */
  readonly recentre?: { readonly runs: number; readonly seen: number };
  /**
   * Each charted indicator's centre offset from its Phase I mean (the model's variables' order) learnt
   * after equipment events; absent: none. The adaptive centre's level offsets add to it.
   */
  readonly centre?: readonly number[];
}

/** A chamber and recipe's monitor state, with the run whose commit wrote it. */
export interface MonitorStateRecord extends WrittenByRun {
  readonly recipe: string;
  readonly state: MonitorState;
}

/** The schema version of {@link MonitorState} this code writes. */
export const MONITOR_STATE_SCHEMA_VERSION = 1;

/** Bounds of a monitor state (a chamber of a few hundred SVIDs fits many times over). */
export const MONITOR_STATE_LIMITS = {
  recipe: 256,
  svidName: 256,
  /** SVIDs with a level offset. */
  levelOffsets: 10_000,
  /** MEWMA dimensions (the model's retained components). */
  mewma: 64,
  /** Charted indicators whose centre an event re-learnt (a model's variables). */
  centre: 100_000,
} as const;

// eslint-disable-next-line no-control-regex -- stored strings must not contain control characters
const CONTROL = /[\u0000-\u001f\u007f]/;

function count(issues: RecordIssue[], path: string, v: unknown, min: number): void {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) issues.push({ path, message: `must be a safe integer >= ${min}` });
}

function modelVersion(issues: RecordIssue[], path: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 0x7fffffff) issues.push({ path, message: 'must be an integer in 1..2147483647' });
}

function label(issues: RecordIssue[], path: string, v: unknown, max: number): void {
  if (typeof v !== 'string' || v.length === 0 || v.length > max || CONTROL.test(v)) {
    issues.push({ path, message: `must be 1-${max} characters without control characters` });
  }
}

/** Every problem of a monitor state (empty when it is valid). */
export function monitorStateIssues(state: unknown, path = 'state'): RecordIssue[] {
  const issues: RecordIssue[] = [];
  if (state === null || typeof state !== 'object' || Array.isArray(state)) return [{ path, message: 'must be an object' }];
  const s = state as Record<string, unknown>;
  modelVersion(issues, `${path}.modelVersion`, s['modelVersion']);
  if (s['phase'] === 'collecting') {
    count(issues, `${path}.runs`, s['runs'], 0);
    if (s['since'] !== undefined) count(issues, `${path}.since`, s['since'], 1);
    for (const k of Object.keys(s)) if (!['phase', 'modelVersion', 'runs', 'since'].includes(k)) issues.push({ path: `${path}.${k}`, message: 'is not a field of a collecting state' });
    return issues;
  }
  if (s['phase'] !== 'judging') return [...issues, { path: `${path}.phase`, message: 'must be "collecting" or "judging"' }];
  count(issues, `${path}.judgedRuns`, s['judgedRuns'], 1);
  if (s['extensionCheckAt'] !== null) count(issues, `${path}.extensionCheckAt`, s['extensionCheckAt'], 1);
  const mewma = s['mewma'];
  if (mewma !== null) {
    if (!Array.isArray(mewma) || mewma.length === 0 || mewma.length > MONITOR_STATE_LIMITS.mewma || !mewma.every((z) => typeof z === 'number' && Number.isFinite(z))) {
      issues.push({ path: `${path}.mewma`, message: `must be null or 1-${MONITOR_STATE_LIMITS.mewma} finite numbers` });
    }
  }
  const offsets = s['levelOffsets'];
  if (offsets === null || typeof offsets !== 'object' || Array.isArray(offsets) || ![Object.prototype, null].includes(Object.getPrototypeOf(offsets))) {
    issues.push({ path: `${path}.levelOffsets`, message: 'must be an object of finite numbers by SVID' });
  } else {
    const entries = Object.entries(offsets as Record<string, unknown>);
    if (entries.length > MONITOR_STATE_LIMITS.levelOffsets) issues.push({ path: `${path}.levelOffsets`, message: `must have at most ${MONITOR_STATE_LIMITS.levelOffsets} SVIDs` });
    for (const [svid, v] of entries) {
      label(issues, `${path}.levelOffsets`, svid, MONITOR_STATE_LIMITS.svidName);
      if (typeof v !== 'number' || !Number.isFinite(v)) issues.push({ path: `${path}.levelOffsets.${svid}`, message: 'must be a finite number' });
    }
  }
  const recentre = s['recentre'];
  if (recentre !== undefined) {
    if (recentre === null || typeof recentre !== 'object' || Array.isArray(recentre) || Object.keys(recentre).some((k) => k !== 'runs' && k !== 'seen')) issues.push({ path: `${path}.recentre`, message: 'must be { runs, seen }' });
    else {
      count(issues, `${path}.recentre.runs`, (recentre as Record<string, unknown>)['runs'], 0);
      count(issues, `${path}.recentre.seen`, (recentre as Record<string, unknown>)['seen'], 0);
    }
  }
  const centre = s['centre'];
  if (centre !== undefined && (!Array.isArray(centre) || centre.length > MONITOR_STATE_LIMITS.centre || !centre.every((c) => typeof c === 'number' && Number.isFinite(c)))) {
    issues.push({ path: `${path}.centre`, message: `must be at most ${MONITOR_STATE_LIMITS.centre} finite numbers` });
  }
  for (const k of Object.keys(s)) {
    if (!['phase', 'modelVersion', 'judgedRuns', 'extensionCheckAt', 'mewma', 'levelOffsets', 'recentre', 'centre'].includes(k)) issues.push({ path: `${path}.${k}`, message: 'is not a field of a judging state' });
  }
  return issues;
}

/** The stored text of a monitor state (schema {@link MONITOR_STATE_SCHEMA_VERSION}). */
export function encodeMonitorState(state: MonitorState): string {
  return JSON.stringify(
    state.phase === 'collecting'
      ? { phase: state.phase, modelVersion: state.modelVersion, runs: state.runs, ...(state.since !== undefined ? { since: state.since } : {}) }
      : {
          phase: state.phase,
          modelVersion: state.modelVersion,
          judgedRuns: state.judgedRuns,
          extensionCheckAt: state.extensionCheckAt,
          mewma: state.mewma,
          levelOffsets: state.levelOffsets,
          ...(state.recentre ? { recentre: { runs: state.recentre.runs, seen: state.recentre.seen } } : {}),
          ...(state.centre ? { centre: state.centre } : {}),
        },
  );
}

/**
 * A stored monitor state back (schema `schemaVersion`, text `body`), checked field by field.
 * @throws UnknownSchemaVersionError for a schema this code does not know.
 * @throws CorruptRecordError when the text is not a valid state of its schema.
 */
export function decodeMonitorState(schemaVersion: unknown, body: string, context: RecordContext): MonitorState {
  const parsed = parseStoredJson(schemaVersion, MONITOR_STATE_SCHEMA_VERSION, body, context, 'the monitor state');
  return checkedStoredRecord<MonitorState>(parsed, monitorStateIssues(parsed), context);
}

/** @throws InvalidRecordError unless `chamber` and `recipe` may key a monitor state read. */
export function validateMonitorStateKey(chamber: ChamberRef, recipe: string): void {
  const issues: RecordIssue[] = [];
  if (chamber === null || typeof chamber !== 'object' || !isValidId(chamber.toolId) || !isValidId(chamber.chamberId)) {
    issues.push({ path: 'chamber', message: 'must be { toolId, chamberId } of valid ids' });
  }
  if (!(typeof recipe === 'string' && recipe.length > 0 && recipe.length <= MONITOR_STATE_LIMITS.recipe && !CONTROL.test(recipe))) issues.push({ path: 'recipe', message: `must be 1-${MONITOR_STATE_LIMITS.recipe} characters without control characters` });
  if (issues.length > 0) throw new InvalidRecordError('monitor state key', issues);
}
