import type { types } from 'cassandra-driver';
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
import type { CassandraStatements } from './cassandra-monitor-state';

/**
 * A chamber's monitor models in `chamber_log` (kind 6, seq = the model version, item = recipe; the
 * columns of migration 4, `state_seq` the sequence of the run whose commit wrote it): in the chamber's
 * partition, so `commitRun`'s single-partition conditional batch writes a fitted model with its run,
 * fenced like the rest, and no TTL ever expires it. No migration of its own.
 */
export const KIND_MONITOR_MODEL = 6;

const HEAD = 'item AS recipe, seq AS version, state_seq AS seq, run_id, committed_at';

function getter(row: types.Row): (column: string) => unknown {
  return (column) => row.get(column) ?? null;
}

export class CassandraMonitorModels implements MonitorModelRepository {
  constructor(private readonly s: CassandraStatements) {}

  get(chamber: ChamberRef, recipe: string, version?: number): Promise<MonitorModelRecord | undefined> {
    return this.s.op('monitorModels.get', 'read', async () => {
      validateMonitorStateKey(chamber, recipe);
      if (version !== undefined) validatePositiveInt('version', version);
      const ref = { toolId: chamber.toolId, chamberId: chamber.chamberId };
      // The newest version of a recipe: the partition's model keys (no bodies), then the one row.
      const wanted = version ?? (await this.versionsOf(ref)).filter((v) => v.recipe === recipe).reduce((max, v) => Math.max(max, v.version), 0);
      if (wanted === 0) return undefined;
      const row = (
        await this.s.exec(`SELECT ${HEAD}, schema_version, body FROM ${this.s.ks}.chamber_log WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = ? AND item = ?`, [
          ref.toolId,
          ref.chamberId,
          KIND_MONITOR_MODEL,
          wanted,
          recipe,
        ])
      ).first();
      return row ? monitorModelFromRow(ref, getter(row), 'chamber_log') : undefined;
    });
  }

  versions(chamber: ChamberRef): Promise<MonitorModelVersion[]> {
    return this.s.op('monitorModels.versions', 'read', async () => {
      validateChamberRef(chamber);
      const versions = await this.versionsOf({ toolId: chamber.toolId, chamberId: chamber.chamberId });
      return versions.sort((a, b) => (a.recipe < b.recipe ? -1 : a.recipe > b.recipe ? 1 : a.version - b.version));
    });
  }

  private async versionsOf(ref: ChamberRef): Promise<MonitorModelVersion[]> {
    const rows = (await this.s.exec(`SELECT ${HEAD} FROM ${this.s.ks}.chamber_log WHERE tool_id = ? AND chamber_id = ? AND kind = ?`, [ref.toolId, ref.chamberId, KIND_MONITOR_MODEL])).rows;
    return rows.map((r) => monitorModelVersionFromRow(ref, getter(r), 'chamber_log'));
  }
}

/**
 * The statement of `commitRun`'s batch that stores the model the run fitted, if it carries one. A
 * version is fitted by one run; a commit that carries a stored version replaces it (as SQLite's does).
 */
export function monitorModelStatement(ks: string, chamber: ChamberRef, input: CommitRunInput): { query: string; params: unknown[] }[] {
  const m = input.monitorModel;
  if (m === undefined || input.recipe === undefined) return [];
  return [
    {
      query: `INSERT INTO ${ks}.chamber_log (tool_id, chamber_id, kind, seq, item, recipe, state_seq, run_id, committed_at, schema_version, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      params: [
        chamber.toolId,
        chamber.chamberId,
        KIND_MONITOR_MODEL,
        m.version,
        input.recipe,
        input.recipe,
        input.sequence,
        input.runId,
        input.committedAt,
        MONITOR_MODEL_SCHEMA_VERSION,
        Buffer.from(encodeMonitorModelBody(m), 'utf8'),
      ],
    },
  ];
}
