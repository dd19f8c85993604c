import type { WrittenByRun } from './chamber';
import { CorruptRecordError, type RecordContext, type RecordIssue } from './errors';
import { checkedStoredRecord, parseStoredJson } from './stored-json';

/**
 * What a chamber remembers of its own runs between runs, whatever recipe they ran: today, whether
 * each of its newest judged runs raised an alarm (what the escalation rules count, "3 alarmed runs
 * within 5"). Written by `commitRun` together with the run's points under the same owner-epoch
 * fencing, so it is always the memory after the chamber's high-water mark; read by the run's owner
 * instead of the alarm flags of its newest stored runs.
 *
 * A judged run is one committed with points (a dead-lettered run, a skipped duplicate, a run whose
 * every reading was skipped: none), the same runs the chamber's history counts. Stepped by
 * {@link rememberRun}, a pure function; a typed, versioned record: stored as the JSON of
 * {@link encodeChamberMemory} with {@link CHAMBER_MEMORY_SCHEMA_VERSION}, checked field by field on
 * load; a newer schema is refused (`UnknownSchemaVersionError`).
 */
export interface ChamberMemory {
  /**
   * Whether each of the chamber's newest judged runs raised an alarm, oldest first, the run that
   * wrote the memory last; at most {@link CHAMBER_MEMORY_LIMITS}`.recentAlarms` of them.
   */
  readonly recentAlarms: readonly boolean[];
  /**
   * Whether `recentAlarms` begins at the chamber's first judged run (none before it is forgotten), so
   * a rule counting further back than it holds has seen every run there is.
   */
  readonly fromFirstRun: boolean;
}

/** A chamber's memory, with the run whose commit wrote it. */
export interface ChamberMemoryRecord extends WrittenByRun {
  readonly memory: ChamberMemory;
}

/** The schema version of {@link ChamberMemory} this code writes. */
export const CHAMBER_MEMORY_SCHEMA_VERSION = 1;

export const CHAMBER_MEMORY_LIMITS = {
  /**
   * Judged runs whose alarm flags are remembered: an escalation rule may count up to this many runs
   * before the current one from the memory alone (a longer window reads the history, as before).
   */
  recentAlarms: 64,
} as const;

/** The memory of a chamber that has judged no run yet. */
export const EMPTY_CHAMBER_MEMORY: ChamberMemory = { recentAlarms: [], fromFirstRun: true };

/**
 * The memory after a judged run that `alarmed` (or not): its flag appended, the oldest flags beyond
 * {@link CHAMBER_MEMORY_LIMITS}`.recentAlarms` forgotten. Pure.
 */
export function rememberRun(memory: ChamberMemory, alarmed: boolean): ChamberMemory {
  const all = [...memory.recentAlarms, alarmed];
  const drop = all.length - CHAMBER_MEMORY_LIMITS.recentAlarms;
  return drop > 0 ? { recentAlarms: all.slice(drop), fromFirstRun: false } : { recentAlarms: all, fromFirstRun: memory.fromFirstRun };
}

/**
 * Whether `memory` answers a rule that counts the `runs` judged runs before the current one: it holds
 * that many, or every run there has been.
 */
export function memoryCovers(memory: ChamberMemory, runs: number): boolean {
  return memory.recentAlarms.length >= runs || memory.fromFirstRun;
}

/** Every problem of a chamber memory (empty when it is valid). */
export function chamberMemoryIssues(memory: unknown, path = 'memory'): RecordIssue[] {
  if (memory === null || typeof memory !== 'object' || Array.isArray(memory)) return [{ path, message: 'must be an object' }];
  const m = memory as Record<string, unknown>;
  const issues: RecordIssue[] = [];
  const recent = m['recentAlarms'];
  if (!Array.isArray(recent) || recent.length > CHAMBER_MEMORY_LIMITS.recentAlarms || !recent.every((a) => typeof a === 'boolean')) {
    issues.push({ path: `${path}.recentAlarms`, message: `must be at most ${CHAMBER_MEMORY_LIMITS.recentAlarms} booleans` });
  }
  if (typeof m['fromFirstRun'] !== 'boolean') issues.push({ path: `${path}.fromFirstRun`, message: 'must be a boolean' });
  for (const k of Object.keys(m)) if (k !== 'recentAlarms' && k !== 'fromFirstRun') issues.push({ path: `${path}.${k}`, message: 'is not a field of a chamber memory' });
  return issues;
}

/**
 * The stored text of a chamber memory (schema {@link CHAMBER_MEMORY_SCHEMA_VERSION}): JSON with the
 * alarm flags as one string of `0` and `1`, oldest first (`{"recentAlarms":"0010","fromFirstRun":true}`).
 */
export function encodeChamberMemory(memory: ChamberMemory): string {
  return JSON.stringify({ recentAlarms: memory.recentAlarms.map((a) => (a ? '1' : '0')).join(''), fromFirstRun: memory.fromFirstRun });
}

/**
 * A stored chamber memory back (schema `schemaVersion`, text `body`), checked field by field.
 * @throws UnknownSchemaVersionError for a schema this code does not know.
 * @throws CorruptRecordError when the text is not a valid memory of its schema.
 */
export function decodeChamberMemory(schemaVersion: unknown, body: string, context: RecordContext): ChamberMemory {
  const parsed = parseStoredJson(schemaVersion, CHAMBER_MEMORY_SCHEMA_VERSION, body, context, 'the chamber memory');
  const flags = parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>)['recentAlarms'] : undefined;
  if (typeof flags !== 'string' || !/^[01]*$/.test(flags)) {
    throw new CorruptRecordError('invalid-value', context, 'memory.recentAlarms: must be a string of 0 and 1');
  }
  const memory = { ...(parsed as Record<string, unknown>), recentAlarms: [...flags].map((c) => c === '1') };
  return checkedStoredRecord<ChamberMemory>(memory, chamberMemoryIssues(memory), context);
}
