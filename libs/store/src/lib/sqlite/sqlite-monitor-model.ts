import {
  encodeMonitorModelBody,
  MONITOR_MODEL_SCHEMA_VERSION,
  validateChamberRef,
  validateMonitorStateKey,
  validatePositiveInt,
  type ChamberRef,
  type CommitRunInput,
  type MonitorModelRecord,
  type MonitorModelRepository,
  type MonitorModelVersion,
} from '@defender/contracts';
import { monitorModelFromRow, monitorModelVersionFromRow } from '../codec/monitor-model-rows';
import type { SqliteStatements } from './sqlite-monitor-state';

const HEAD = 'recipe, version, seq, run_id, committed_at';

function row(r: unknown): (column: string) => unknown {
  const rec = r as Record<string, unknown>;
  return (column) => rec[column] ?? null;
}

/** `monitor_model` (migration 6): one row per chamber, recipe and model version, written once by the commit of the run that fitted it. */
export class SqliteMonitorModels implements MonitorModelRepository {
  constructor(private readonly c: SqliteStatements) {}

  get(chamber: ChamberRef, recipe: string, version?: number): Promise<MonitorModelRecord | undefined> {
    return this.c.op('monitorModels.get', 'read', () => {
      validateMonitorStateKey(chamber, recipe);
      if (version !== undefined) validatePositiveInt('version', version);
      const where = 'WHERE tool_id = ? AND chamber_id = ? AND recipe = ?';
      const r =
        version === undefined
          ? this.c.sql(`SELECT ${HEAD}, schema_version, body FROM monitor_model ${where} ORDER BY version DESC LIMIT 1`).get(chamber.toolId, chamber.chamberId, recipe)
          : this.c.sql(`SELECT ${HEAD}, schema_version, body FROM monitor_model ${where} AND version = ?`).get(chamber.toolId, chamber.chamberId, recipe, version);
      return r ? monitorModelFromRow({ toolId: chamber.toolId, chamberId: chamber.chamberId }, row(r), 'monitor_model') : undefined;
    });
  }

  versions(chamber: ChamberRef): Promise<MonitorModelVersion[]> {
    return this.c.op('monitorModels.versions', 'read', () => {
      validateChamberRef(chamber);
      const ref = { toolId: chamber.toolId, chamberId: chamber.chamberId };
      return this.c
        .sql(`SELECT ${HEAD} FROM monitor_model WHERE tool_id = ? AND chamber_id = ? ORDER BY recipe, version`)
        .all(chamber.toolId, chamber.chamberId)
        .map((r) => monitorModelVersionFromRow(ref, row(r), 'monitor_model'));
    });
  }
}

/**
 * Writes a commit's model (inside the commit's transaction, after its fencing checks). A version is
 * fitted by one run; a commit that carries a stored version replaces it, as Cassandra's does.
 * `validateCommitRunInput` has checked it and its recipe.
 */
export function writeMonitorModel(c: SqliteStatements, chamber: ChamberRef, input: CommitRunInput): void {
  const m = input.monitorModel;
  if (m === undefined || input.recipe === undefined) return;
  c.sql(
    `INSERT INTO monitor_model (tool_id, chamber_id, ${HEAD}, schema_version, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (tool_id, chamber_id, recipe, version) DO UPDATE SET
       seq = excluded.seq, run_id = excluded.run_id, committed_at = excluded.committed_at,
       schema_version = excluded.schema_version, body = excluded.body`,
  ).run(chamber.toolId, chamber.chamberId, input.recipe, m.version, input.sequence, input.runId, input.committedAt.getTime(), MONITOR_MODEL_SCHEMA_VERSION, encodeMonitorModelBody(m));
}
