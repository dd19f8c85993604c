import type { QueryOptions, types } from 'cassandra-driver';
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

/**
 * A chamber's monitor state per recipe in `chamber_log` (kind 4, seq 0, item = recipe; migration 4's
 * `state_seq` holds the sequence of the run that wrote it): in the chamber's partition, so
 * `commitRun`'s single-partition conditional batch writes it with the run, fenced like the rest.
 */
export const KIND_MONITOR_STATE = 4;

/** What the monitor state needs of the Cassandra store's session. */
export interface CassandraStatements {
  readonly ks: string;
  op<T>(operation: string, kind: 'read' | 'write', fn: () => Promise<T>): Promise<T>;
  exec(query: string, params: unknown[], extra?: QueryOptions): Promise<types.ResultSet>;
}

const SELECT = 'SELECT recipe, state_seq AS seq, run_id, committed_at, schema_version, body FROM';

function getter(row: types.Row): (column: string) => unknown {
  return (column) => row.get(column) ?? null;
}

export class CassandraMonitorState implements MonitorStateRepository {
  constructor(private readonly s: CassandraStatements) {}

  get(chamber: ChamberRef, recipe: string): Promise<MonitorStateRecord | undefined> {
    return this.s.op('monitorState.get', 'read', async () => {
      validateMonitorStateKey(chamber, recipe);
      const row = (
        await this.s.exec(`${SELECT} ${this.s.ks}.chamber_log WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = 0 AND item = ?`, [
          chamber.toolId,
          chamber.chamberId,
          KIND_MONITOR_STATE,
          recipe,
        ])
      ).first();
      return row ? monitorStateFromRow({ toolId: chamber.toolId, chamberId: chamber.chamberId }, getter(row), 'chamber_log') : undefined;
    });
  }

  list(chamber: ChamberRef): Promise<MonitorStateRecord[]> {
    return this.s.op('monitorState.list', 'read', async () => {
      validateChamberRef(chamber);
      const ref = { toolId: chamber.toolId, chamberId: chamber.chamberId };
      const rows = (await this.s.exec(`${SELECT} ${this.s.ks}.chamber_log WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = 0`, [chamber.toolId, chamber.chamberId, KIND_MONITOR_STATE])).rows;
      return rows.map((r) => monitorStateFromRow(ref, getter(r), 'chamber_log'));
    });
  }
}

/** The statement of `commitRun`'s batch that replaces the recipe's monitor state, if the commit carries one. */
export function monitorStateStatement(ks: string, chamber: ChamberRef, input: CommitRunInput): { query: string; params: unknown[] }[] {
  if (input.monitorState === undefined || input.recipe === undefined) return [];
  return [recipeStateStatement(ks, chamber, input.recipe, input.monitorState, input)];
}

/** The statement that replaces `recipe`'s monitor state with `state`, written by the commit `by`. */
export function recipeStateStatement(
  ks: string,
  chamber: ChamberRef,
  recipe: string,
  state: MonitorState,
  by: Pick<CommitRunInput, 'sequence' | 'runId' | 'committedAt'>,
): { query: string; params: unknown[] } {
  return {
    query: `INSERT INTO ${ks}.chamber_log (tool_id, chamber_id, kind, seq, item, recipe, state_seq, run_id, committed_at, schema_version, body) VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
    params: [chamber.toolId, chamber.chamberId, KIND_MONITOR_STATE, recipe, recipe, by.sequence, by.runId, by.committedAt, MONITOR_STATE_SCHEMA_VERSION, Buffer.from(encodeMonitorState(state), 'utf8')],
  };
}
