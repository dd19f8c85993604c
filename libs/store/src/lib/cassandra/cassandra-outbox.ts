import {
  FencedError,
  validateChamberRef,
  validateEpoch,
  validatePositiveInt,
  type ChamberRef,
  type OutboxEntry,
  type OutboxRepository,
} from '@defender/contracts';
import { outboxEntryFromRow, storedInt } from '../codec/rows';
import { Session, getter, chamberOf, KIND_OUTBOX } from './cassandra-session';

/**
 * The outbox in `chamber_log` (kind 3 rows, the `published_through` static): entries above the mark
 * are pending; those at or below it are never read again (a range read from the top of the kind
 * stops at the mark) and expire with the run retention.
 */
export class CassandraOutbox implements OutboxRepository {
  private readonly t: string;

  constructor(private readonly s: Session) {
    this.t = `${s.ks}.chamber_log`;
  }

  private async mark(chamber: ChamberRef): Promise<number> {
    const row = (await this.s.exec(`SELECT published_through FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`, [chamber.toolId, chamber.chamberId])).first();
    const raw: unknown = row?.get('published_through');
    return raw === null || raw === undefined ? 0 : storedInt(raw, { chamber, table: 'chamber_log' }, 'published_through');
  }

  pending(chamberIn: ChamberRef, options: { limit: number }): Promise<OutboxEntry[]> {
    return this.s.op('outbox.pending', 'read', async () => {
      validateChamberRef(chamberIn);
      validatePositiveInt('limit', options.limit);
      const chamber = chamberOf(chamberIn);
      const through = await this.mark(chamber);
      const rows = await this.s.all(
        `SELECT seq, item, subject, msg_id, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq > ?`,
        [chamber.toolId, chamber.chamberId, KIND_OUTBOX, through],
        1000,
      );
      return rows
        .map((r) => outboxEntryFromRow(chamber, getter(r), 'chamber_log'))
        .sort((a, b) => a.sequence - b.sequence || a.index - b.index)
        .slice(0, options.limit);
    });
  }

  publishedThrough(chamber: ChamberRef): Promise<number> {
    return this.s.op('outbox.publishedThrough', 'read', async () => {
      validateChamberRef(chamber);
      return this.mark(chamberOf(chamber));
    });
  }

  markPublished(chamberIn: ChamberRef, epoch: number, through: number): Promise<void> {
    return this.s.op('outbox.markPublished', 'write', async () => {
      validateChamberRef(chamberIn);
      validateEpoch(epoch);
      validatePositiveInt('through', through);
      const chamber = chamberOf(chamberIn);
      // Only the owner marks (one worker per chamber, marks in order), so the mark only rises; the
      // condition fences a deposed owner, which therefore never moves it past what it published.
      if ((await this.mark(chamber)) >= through) return;
      const r = await this.s.exec(`UPDATE ${this.t} SET published_through = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ?`, [
        through,
        chamber.toolId,
        chamber.chamberId,
        epoch,
      ]);
      if (r.wasApplied()) return;
      const row = (
        await this.s.exec(`SELECT owner_epoch, owner_id FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`, [chamber.toolId, chamber.chamberId], this.s.serialRead)
      ).first();
      const stored: unknown = row?.get('owner_epoch');
      throw new FencedError(
        chamber,
        epoch,
        stored === null || stored === undefined ? 0 : storedInt(stored, { chamber, table: 'chamber_log' }, 'owner_epoch'),
        (row?.get('owner_id') as string | null | undefined) ?? null,
      );
    });
  }
}
