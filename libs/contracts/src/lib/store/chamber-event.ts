import { equipmentEventSchema, type EquipmentEvent } from '../cluster/equipment-event';
import type { WrittenByRun } from './chamber';
import { CorruptRecordError, type RecordContext, type RecordIssue } from './errors';
import { monitorStateIssues, MONITOR_STATE_LIMITS, type MonitorState } from './monitor-state';
import type { CommitRunInput } from './records';
import { parseStoredJson } from './stored-json';

/**
 * An equipment event (a PM, a clean, a part change, … contracts `EquipmentEvent`) as the chamber's
 * history keeps it (issue 49, ADR 0019). An event travels in the chamber's notification stream and is
 * committed at its stream sequence like a run — `commitRun` with `CommitRunInput.event`, under the
 * owner's epoch, moving the high-water mark — with no points, the run id {@link eventRunId} (so an
 * event published again is a duplicate, as a run is), and the monitor states the event changes. One
 * atomic write: the event, the states it changes, the mark.
 */
export interface ChamberEventInput {
  readonly event: EquipmentEvent;
  /** The monitor states the event changes (one per recipe; the others stay as they are). */
  readonly monitorStates: readonly { readonly recipe: string; readonly state: MonitorState }[];
}

/** A stored equipment event, with the commit that stored it. */
export interface ChamberEventRecord extends WrittenByRun {
  readonly event: EquipmentEvent;
}

/** The schema version of a stored event's body (the event's JSON, schema 1 of `EquipmentEvent`). */
export const CHAMBER_EVENT_SCHEMA_VERSION = 1;

/** Recipes whose state one event may change. */
export const CHAMBER_EVENT_LIMITS = { monitorStates: 1000 } as const;

/** The run id an event is committed under: its idempotency key in the chamber's applied runs. */
export function eventRunId(eventId: string): string {
  return `event:${eventId}`;
}

/** Every problem of a commit that carries an event (empty when it is valid or carries none). */
export function chamberEventIssues(input: CommitRunInput): RecordIssue[] {
  const e = input.event;
  if (e === undefined) return [];
  const issues: RecordIssue[] = [];
  if (e === null || typeof e !== 'object') return [{ path: 'event', message: 'must be an object' }];
  const parsed = equipmentEventSchema.safeParse(e.event);
  if (!parsed.success) {
    for (const i of parsed.error.issues.slice(0, 10)) issues.push({ path: ['event', 'event', ...i.path.map(String)].join('.'), message: i.message });
  } else {
    if (input.runId !== eventRunId(parsed.data.eventId)) issues.push({ path: 'runId', message: `must be "${eventRunId(parsed.data.eventId)}" for this event` });
    if (parsed.data.toolId !== input.chamber?.toolId || parsed.data.chamberId !== input.chamber?.chamberId) issues.push({ path: 'event.event', message: 'is of another chamber' });
  }
  if (Array.isArray(input.points) && input.points.length > 0) issues.push({ path: 'points', message: 'must be empty with an event' });
  for (const field of ['alarms', 'hold', 'monitorState', 'monitorModel'] as const) {
    if (input[field] !== undefined) issues.push({ path: field, message: 'must be absent with an event (its monitor states go in event.monitorStates)' });
  }
  const states = e.monitorStates;
  if (!Array.isArray(states) || states.length > CHAMBER_EVENT_LIMITS.monitorStates) {
    issues.push({ path: 'event.monitorStates', message: `must be an array of at most ${CHAMBER_EVENT_LIMITS.monitorStates} recipe states` });
    return issues;
  }
  const recipes = new Set<string>();
  states.forEach((s, i) => {
    const path = `event.monitorStates[${i}]`;
    if (s === null || typeof s !== 'object') return void issues.push({ path, message: 'must be { recipe, state }' });
    if (typeof s.recipe !== 'string' || s.recipe.length === 0 || s.recipe.length > MONITOR_STATE_LIMITS.recipe) issues.push({ path: `${path}.recipe`, message: `must be 1-${MONITOR_STATE_LIMITS.recipe} characters` });
    else if (recipes.has(s.recipe)) issues.push({ path: `${path}.recipe`, message: `duplicate recipe "${s.recipe}"` });
    else recipes.add(s.recipe);
    issues.push(...monitorStateIssues(s.state, `${path}.state`));
  });
  return issues;
}

/** The stored text of an event (schema {@link CHAMBER_EVENT_SCHEMA_VERSION}): its JSON. */
export function encodeChamberEvent(event: EquipmentEvent): string {
  return JSON.stringify(event);
}

/**
 * A stored event back (schema `schemaVersion`, text `body`), checked as a published one is.
 * @throws UnknownSchemaVersionError for a schema this code does not know.
 * @throws CorruptRecordError when the text is not a valid event.
 */
export function decodeChamberEvent(schemaVersion: unknown, body: string, context: RecordContext): EquipmentEvent {
  const parsed = equipmentEventSchema.safeParse(parseStoredJson(schemaVersion, CHAMBER_EVENT_SCHEMA_VERSION, body, context, 'the equipment event'));
  if (!parsed.success) throw new CorruptRecordError('invalid-value', context, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  return parsed.data;
}
