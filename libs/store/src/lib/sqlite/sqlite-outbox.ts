import {
  FencedError,
  validateChamberRef,
  validateEpoch,
  validatePositiveInt,
  type ChamberRef,
  type OutboxEntry,
  type OutboxRepository,
} from '@defender/contracts';
import { outboxEntryFromRow, storedInt, storedText } from '../codec/rows';
import { Conn, type SqlRow, getter, chamberOf } from './sqlite-conn';

export class SqliteOutbox implements OutboxRepository {
  constructor(private readonly c: Conn) {}

  pending(chamber: ChamberRef, options: { limit: number }): Promise<OutboxEntry[]> {
    return this.c.op('outbox.pending', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const ref = chamberOf(chamber);
      // Published entries are deleted with the mark; the join only guards against a mark moved without it.
      const rows = this.c
        .sql(
          `SELECT o.seq, o.idx, o.subject, o.msg_id, o.payload FROM outbox o JOIN chamber_state s ON s.tool_id = o.tool_id AND s.chamber_id = o.chamber_id
           WHERE o.tool_id = ? AND o.chamber_id = ? AND o.seq > s.published_through ORDER BY o.seq, o.idx LIMIT ?`,
        )
        .all(ref.toolId, ref.chamberId, options.limit) as SqlRow[];
      return rows.map((r) => outboxEntryFromRow(ref, getter(r), 'outbox'));
    });
  }

  publishedThrough(chamber: ChamberRef): Promise<number> {
    return this.c.op('outbox.publishedThrough', 'read', () => {
      validateChamberRef(chamber);
      const row = this.c.sql('SELECT published_through FROM chamber_state WHERE tool_id = ? AND chamber_id = ?').get(chamber.toolId, chamber.chamberId) as SqlRow | undefined;
      return row ? storedInt(row['published_through'], { chamber: chamberOf(chamber), table: 'chamber_state' }, 'published_through') : 0;
    });
  }

  markPublished(chamberIn: ChamberRef, epoch: number, through: number): Promise<void> {
    return this.c.op('outbox.markPublished', 'write', () => {
      validateChamberRef(chamberIn);
      validateEpoch(epoch);
      validatePositiveInt('through', through);
      const chamber = chamberOf(chamberIn);
      this.c.write(() => {
        const row = this.c.sql('SELECT owner_epoch, owner_id FROM chamber_state WHERE tool_id = ? AND chamber_id = ?').get(chamber.toolId, chamber.chamberId) as
          | SqlRow
          | undefined;
        const ctx = { chamber, table: 'chamber_state' };
        if (!row) throw new FencedError(chamber, epoch, 0, null);
        const stored = storedInt(row['owner_epoch'], ctx, 'owner_epoch');
        if (stored > epoch) throw new FencedError(chamber, epoch, stored, storedText(row['owner_id'], ctx, 'owner_id'));
        this.c
          .sql('UPDATE chamber_state SET published_through = MAX(published_through, ?) WHERE tool_id = ? AND chamber_id = ?')
          .run(through, chamber.toolId, chamber.chamberId);
        this.c.sql('DELETE FROM outbox WHERE tool_id = ? AND chamber_id = ? AND seq <= ?').run(chamber.toolId, chamber.chamberId, through);
      });
    });
  }
}
