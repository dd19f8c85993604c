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
import type { CassandraStatements } from './cassandra-monitor-state';

/**
 * A chamber's memory in `chamber_log` (kind 5, seq 0, item ''; `state_seq` holds the sequence of the
 * run that wrote it): in the chamber's partition, so `commitRun`'s single-partition conditional batch
 * writes it with the run, fenced like the rest. The columns are migration 4's: no migration of its own.
 */
export const KIND_CHAMBER_MEMORY = 5;

export class CassandraChamberMemory implements ChamberMemoryRepository {
  constructor(private readonly s: CassandraStatements) {}

  get(chamber: ChamberRef): Promise<ChamberMemoryRecord | undefined> {
    return this.s.op('chamberMemory.get', 'read', async () => {
      validateChamberRef(chamber);
      const row = (
        await this.s.exec(
          `SELECT state_seq AS seq, run_id, committed_at, schema_version, body FROM ${this.s.ks}.chamber_log WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = 0 AND item = ''`,
          [chamber.toolId, chamber.chamberId, KIND_CHAMBER_MEMORY],
        )
      ).first();
      return row ? chamberMemoryFromRow({ toolId: chamber.toolId, chamberId: chamber.chamberId }, (column) => row.get(column) ?? null, 'chamber_log') : undefined;
    });
  }
}

/** The statement of `commitRun`'s batch that replaces the chamber's memory, if the commit carries one. */
export function chamberMemoryStatement(ks: string, chamber: ChamberRef, input: CommitRunInput): { query: string; params: unknown[] }[] {
  if (input.chamberMemory === undefined) return [];
  return [
    {
      query: `INSERT INTO ${ks}.chamber_log (tool_id, chamber_id, kind, seq, item, state_seq, run_id, committed_at, schema_version, body) VALUES (?, ?, ?, 0, '', ?, ?, ?, ?, ?)`,
      params: [
        chamber.toolId,
        chamber.chamberId,
        KIND_CHAMBER_MEMORY,
        input.sequence,
        input.runId,
        input.committedAt,
        CHAMBER_MEMORY_SCHEMA_VERSION,
        Buffer.from(encodeChamberMemory(input.chamberMemory), 'utf8'),
      ],
    },
  ];
}
