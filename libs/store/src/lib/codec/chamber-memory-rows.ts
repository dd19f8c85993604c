import { decodeChamberMemory, type ChamberMemoryRecord, type ChamberRef } from '@defender/contracts';
import { storedDate, storedInt, storedText, type RowGetter } from './rows';

/**
 * A chamber memory row back: columns `seq`, `run_id`, `committed_at`, `schema_version` and `body`
 * (the memory's JSON text, or its UTF-8 bytes), each checked.
 */
export function chamberMemoryFromRow(chamber: ChamberRef, get: RowGetter, table: string): ChamberMemoryRecord {
  const ctx = { chamber, table };
  const body = get('body');
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : storedText(body, ctx, 'body');
  return {
    ...chamber,
    sequence: storedInt(get('seq'), ctx, 'seq', 1),
    runId: storedText(get('run_id'), ctx, 'run_id'),
    committedAt: storedDate(get('committed_at'), ctx, 'committed_at'),
    memory: decodeChamberMemory(storedInt(get('schema_version'), ctx, 'schema_version'), text, { ...ctx, column: 'body' }),
  };
}
