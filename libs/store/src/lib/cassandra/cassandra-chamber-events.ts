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
import { recipeStateStatement, type CassandraStatements } from './cassandra-monitor-state';

/**
 * A chamber's equipment events in `chamber_log` (kind 7, seq = the stream sequence it was committed
 * at, item ''; the recipe column holds the event's recipe): in the chamber's partition, so
 * `commitRun`'s single-partition conditional batch writes an event with the monitor states it changes
 * and the mark, fenced like a run. Kept with no TTL (a few a week). No migration of its own.
 */
export const KIND_CHAMBER_EVENT = 7;

export class CassandraChamberEvents implements ChamberEventRepository {
  constructor(private readonly s: CassandraStatements) {}

  list(chamber: ChamberRef, options: { readonly limit: number }): Promise<ChamberEventRecord[]> {
    return this.s.op('chamberEvents.list', 'read', async () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const ref = { toolId: chamber.toolId, chamberId: chamber.chamberId };
      const rows = (
        await this.s.exec(`SELECT seq, run_id, committed_at, schema_version, body FROM ${this.s.ks}.chamber_log WHERE tool_id = ? AND chamber_id = ? AND kind = ? LIMIT ?`, [
          ref.toolId,
          ref.chamberId,
          KIND_CHAMBER_EVENT,
          Math.min(options.limit, 1000),
        ])
      ).rows;
      // Clustering order: seq descending, newest first.
      return rows.map((r) => chamberEventFromRow(ref, (column) => r.get(column) ?? null, 'chamber_log'));
    });
  }
}

/** The statements of `commitRun`'s batch that store the event the commit carries and the monitor states it changes. */
export function chamberEventStatements(ks: string, chamber: ChamberRef, input: CommitRunInput): { query: string; params: unknown[] }[] {
  const e = input.event;
  if (e === undefined) return [];
  return [
    {
      query: `INSERT INTO ${ks}.chamber_log (tool_id, chamber_id, kind, seq, item, recipe, run_id, committed_at, schema_version, body) VALUES (?, ?, ?, ?, '', ?, ?, ?, ?, ?)`,
      params: [
        chamber.toolId,
        chamber.chamberId,
        KIND_CHAMBER_EVENT,
        input.sequence,
        e.event.recipe ?? null,
        input.runId,
        input.committedAt,
        CHAMBER_EVENT_SCHEMA_VERSION,
        Buffer.from(encodeChamberEvent(e.event), 'utf8'),
      ],
    },
    ...e.monitorStates.map((s) => recipeStateStatement(ks, chamber, s.recipe, s.state, input)),
  ];
}
