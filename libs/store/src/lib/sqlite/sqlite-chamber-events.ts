import {
  CHAMBER_EVENT_SCHEMA_VERSION,
  encodeChamberEvent,
  validateChamberRef,
  validatePositiveInt,
  type ChamberEventRecord,
  type ChamberEventRepository,
  type ChamberRef,
  type CommitRunInput,
} from '@defender/contracts';
import { chamberEventFromRow } from '../codec/chamber-event-rows';
import { writeRecipeState, type SqliteStatements } from './sqlite-monitor-state';

/** `chamber_events` (migration 7): one row per event, at the stream sequence it was committed at. */
export class SqliteChamberEvents implements ChamberEventRepository {
  constructor(private readonly c: SqliteStatements) {}

  list(chamber: ChamberRef, options: { readonly limit: number }): Promise<ChamberEventRecord[]> {
    return this.c.op('chamberEvents.list', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const ref = { toolId: chamber.toolId, chamberId: chamber.chamberId };
      return this.c
        .sql('SELECT seq, run_id, committed_at, schema_version, body FROM chamber_events WHERE tool_id = ? AND chamber_id = ? ORDER BY seq DESC LIMIT ?')
        .all(chamber.toolId, chamber.chamberId, Math.min(options.limit, 1000))
        .map((r) => chamberEventFromRow(ref, (column) => (r as Record<string, unknown>)[column] ?? null, 'chamber_events'));
    });
  }
}

/**
 * Writes a commit's event and the monitor states it changes (inside the commit's transaction, after
 * its fencing checks). `validateCommitRunInput` has checked them.
 */
export function writeChamberEvent(c: SqliteStatements, chamber: ChamberRef, input: CommitRunInput): void {
  const e = input.event;
  if (e === undefined) return;
  c.sql(
    'INSERT INTO chamber_events (tool_id, chamber_id, seq, event_id, kind, at, run_id, committed_at, schema_version, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(chamber.toolId, chamber.chamberId, input.sequence, e.event.eventId, e.event.kind, Date.parse(e.event.at), input.runId, input.committedAt.getTime(), CHAMBER_EVENT_SCHEMA_VERSION, encodeChamberEvent(e.event));
  for (const s of e.monitorStates) writeRecipeState(c, chamber, s.recipe, s.state, input);
}
