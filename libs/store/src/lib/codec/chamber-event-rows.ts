import { decodeChamberEvent, type ChamberEventRecord, type ChamberRef } from '@defender/contracts';
import { storedDate, storedInt, storedText, type RowGetter } from './rows';

/**
 * A stored event row back: columns `seq`, `run_id`, `committed_at`, `schema_version` and `body` (the
 * event's JSON text, or its UTF-8 bytes), each checked.
 */
export function chamberEventFromRow(chamber: ChamberRef, get: RowGetter, table: string): ChamberEventRecord {
  const ctx = { chamber, table };
  const sequence = storedInt(get('seq'), ctx, 'seq', 1);
  const body = get('body');
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : storedText(body, ctx, 'body');
  return {
    ...chamber,
    sequence,
    runId: storedText(get('run_id'), ctx, 'run_id'),
    committedAt: storedDate(get('committed_at'), ctx, 'committed_at'),
    event: decodeChamberEvent(storedInt(get('schema_version'), ctx, 'schema_version'), text, { ...ctx, column: 'body' }),
  };
}
