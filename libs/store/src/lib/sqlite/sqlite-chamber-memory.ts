import {
  CHAMBER_MEMORY_SCHEMA_VERSION,
  encodeChamberMemory,
  validateChamberRef,
  type ChamberMemoryRecord,
  type ChamberMemoryRepository,
  type ChamberRef,
  type CommitRunInput,
} from '@defender/contracts';
import { chamberMemoryFromRow } from '../codec/chamber-memory-rows';
import type { SqliteStatements } from './sqlite-monitor-state';

const COLUMNS = 'seq, run_id, committed_at, schema_version, body';

/** `chamber_memory` (migration 5): one row per chamber, replaced by each commit that carries one. */
export class SqliteChamberMemory implements ChamberMemoryRepository {
  constructor(private readonly c: SqliteStatements) {}

  get(chamber: ChamberRef): Promise<ChamberMemoryRecord | undefined> {
    return this.c.op('chamberMemory.get', 'read', () => {
      validateChamberRef(chamber);
      const r = this.c.sql(`SELECT ${COLUMNS} FROM chamber_memory WHERE tool_id = ? AND chamber_id = ?`).get(chamber.toolId, chamber.chamberId) as Record<string, unknown> | undefined;
      return r ? chamberMemoryFromRow({ toolId: chamber.toolId, chamberId: chamber.chamberId }, (column) => r[column] ?? null, 'chamber_memory') : undefined;
    });
  }
}

/**
 * Writes a commit's chamber memory (inside the commit's transaction, after its fencing checks).
 * `validateCommitRunInput` has checked it.
 */
export function writeChamberMemory(c: SqliteStatements, chamber: ChamberRef, input: CommitRunInput): void {
  if (input.chamberMemory === undefined) return;
  c.sql(
    `INSERT INTO chamber_memory (tool_id, chamber_id, ${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (tool_id, chamber_id) DO UPDATE SET
       seq = excluded.seq, run_id = excluded.run_id, committed_at = excluded.committed_at,
       schema_version = excluded.schema_version, body = excluded.body`,
  ).run(chamber.toolId, chamber.chamberId, input.sequence, input.runId, input.committedAt.getTime(), CHAMBER_MEMORY_SCHEMA_VERSION, encodeChamberMemory(input.chamberMemory));
}
