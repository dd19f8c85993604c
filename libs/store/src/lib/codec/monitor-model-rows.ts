import { decodeMonitorModelBody, type ChamberRef, type MonitorModelRecord, type MonitorModelVersion } from '@defender/contracts';
import { storedDate, storedInt, storedText, type RowGetter } from './rows';

/** A model version's row without its body: columns `recipe`, `version`, `seq`, `run_id` and `committed_at`, each checked. */
export function monitorModelVersionFromRow(chamber: ChamberRef, get: RowGetter, table: string): MonitorModelVersion {
  const ctx = { chamber, table };
  const recipe = storedText(get('recipe'), ctx, 'recipe');
  const version = storedInt(get('version'), { ...ctx, indicatorKey: recipe }, 'version', 1);
  const rowCtx = { ...ctx, indicatorKey: recipe, version };
  return {
    ...chamber,
    recipe,
    version,
    sequence: storedInt(get('seq'), rowCtx, 'seq', 1),
    runId: storedText(get('run_id'), rowCtx, 'run_id'),
    committedAt: storedDate(get('committed_at'), rowCtx, 'committed_at'),
  };
}

/**
 * A model row back: the columns of {@link monitorModelVersionFromRow}, `schema_version` and `body`
 * (the record's JSON text, or its UTF-8 bytes), each checked.
 */
export function monitorModelFromRow(chamber: ChamberRef, get: RowGetter, table: string): MonitorModelRecord {
  const head = monitorModelVersionFromRow(chamber, get, table);
  const ctx = { chamber, table, indicatorKey: head.recipe, version: head.version };
  const body = get('body');
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : storedText(body, ctx, 'body');
  return { ...head, ...decodeMonitorModelBody(storedInt(get('schema_version'), ctx, 'schema_version'), head.version, text, { ...ctx, column: 'body' }) };
}
