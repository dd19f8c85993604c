import type Database from 'better-sqlite3';
import {
  encodeMonitorState,
  MONITOR_STATE_SCHEMA_VERSION,
  validateChamberRef,
  validateMonitorStateKey,
  type ChamberRef,
  type CommitRunInput,
  type MonitorState,
  type MonitorStateRecord,
  type MonitorStateRepository,
} from '@defender/contracts';
import { monitorStateFromRow } from '../codec/monitor-state-rows';

/** What the monitor state needs of the SQLite store's connection (its `Conn`). */
export interface SqliteStatements {
  sql(text: string): Database.Statement;
  op<T>(operation: string, kind: 'read' | 'write', fn: () => T): Promise<T>;
}

const COLUMNS = 'recipe, seq, run_id, committed_at, schema_version, body';

function row(r: unknown): (column: string) => unknown {
  const rec = r as Record<string, unknown>;
  return (column) => rec[column] ?? null;
}

/** `monitor_state` (migration 4): one row per chamber and recipe, replaced by each commit that carries one. */
export class SqliteMonitorState implements MonitorStateRepository {
  constructor(private readonly c: SqliteStatements) {}

  get(chamber: ChamberRef, recipe: string): Promise<MonitorStateRecord | undefined> {
    return this.c.op('monitorState.get', 'read', () => {
      validateMonitorStateKey(chamber, recipe);
      const r = this.c.sql(`SELECT ${COLUMNS} FROM monitor_state WHERE tool_id = ? AND chamber_id = ? AND recipe = ?`).get(chamber.toolId, chamber.chamberId, recipe);
      return r ? monitorStateFromRow({ toolId: chamber.toolId, chamberId: chamber.chamberId }, row(r), 'monitor_state') : undefined;
    });
  }

  list(chamber: ChamberRef): Promise<MonitorStateRecord[]> {
    return this.c.op('monitorState.list', 'read', () => {
      validateChamberRef(chamber);
      const ref = { toolId: chamber.toolId, chamberId: chamber.chamberId };
      return this.c
        .sql(`SELECT ${COLUMNS} FROM monitor_state WHERE tool_id = ? AND chamber_id = ? ORDER BY recipe`)
        .all(chamber.toolId, chamber.chamberId)
        .map((r) => monitorStateFromRow(ref, row(r), 'monitor_state'));
    });
  }
}

/**
 * Writes a commit's monitor state (inside the commit's transaction, after its fencing checks).
 * `validateCommitRunInput` has checked it and its recipe.
 */
export function writeMonitorState(c: SqliteStatements, chamber: ChamberRef, input: CommitRunInput): void {
  if (input.monitorState === undefined || input.recipe === undefined) return;
  writeRecipeState(c, chamber, input.recipe, input.monitorState, input);
}

/** Replaces `recipe`'s monitor state with `state`, written by the commit `by`. */
export function writeRecipeState(c: SqliteStatements, chamber: ChamberRef, recipe: string, state: MonitorState, by: Pick<CommitRunInput, 'sequence' | 'runId' | 'committedAt'>): void {
  c.sql(
    `INSERT INTO monitor_state (tool_id, chamber_id, ${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (tool_id, chamber_id, recipe) DO UPDATE SET
       seq = excluded.seq, run_id = excluded.run_id, committed_at = excluded.committed_at,
       schema_version = excluded.schema_version, body = excluded.body`,
  ).run(chamber.toolId, chamber.chamberId, recipe, by.sequence, by.runId, by.committedAt.getTime(), MONITOR_STATE_SCHEMA_VERSION, encodeMonitorState(state));
}
