import { decodeMonitorState, type ChamberRef, type MonitorStateRecord } from '@defender/contracts';
import { storedDate, storedInt, storedText, type RowGetter } from './rows';

/**
 * A monitor state row back: columns `recipe`, `seq`, `run_id`, `committed_at`, `schema_version` and
 * `body` (the state's JSON text, or its UTF-8 bytes), each checked.
 */
export function monitorStateFromRow(chamber: ChamberRef, get: RowGetter, table: string): MonitorStateRecord {
  const ctx = { chamber, table };
  const recipe = storedText(get('recipe'), ctx, 'recipe');
  const rowCtx = { ...ctx, indicatorKey: recipe };
  const body = get('body');
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : storedText(body, rowCtx, 'body');
  return {
    ...chamber,
    recipe,
    sequence: storedInt(get('seq'), rowCtx, 'seq', 1),
    runId: storedText(get('run_id'), rowCtx, 'run_id'),
    committedAt: storedDate(get('committed_at'), rowCtx, 'committed_at'),
    state: decodeMonitorState(storedInt(get('schema_version'), rowCtx, 'schema_version'), text, { ...rowCtx, column: 'body' }),
  };
}
