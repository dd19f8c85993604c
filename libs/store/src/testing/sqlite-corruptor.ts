import type Database from 'better-sqlite3';
import type { DefenderStore, RunRef } from '@defender/contracts';
import type { SeriesKind } from '../lib/codec/trace-codec';
import type { StoreCorruptor } from './store-contract';

/** Damages a SQLite store's tables through `db(store)`, a connection to its file (see StoreCorruptor). */
export function sqliteCorruptor(db: (store: DefenderStore) => Database.Database): StoreCorruptor {
  return {
    async setLimitCenterNaN(store, c, key, version) {
      // SQLite stores NaN as NULL; either way the centre is no longer a number.
      db(store)
        .prepare(
          'UPDATE limit_sets SET center = ? WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? AND version = ?',
        )
        .run(NaN, c.toolId, c.chamberId, key, version);
    },
    async setLimitParams(store, c, key, version, params) {
      db(store)
        .prepare(
          'UPDATE limit_sets SET params = ? WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? AND version = ?',
        )
        .run(params, c.toolId, c.chamberId, key, version);
    },
    async setRunBody(store, c, seq, body) {
      db(store)
        .prepare('UPDATE uchart_runs SET body = ? WHERE tool_id = ? AND chamber_id = ? AND seq = ?')
        .run(body, c.toolId, c.chamberId, seq);
    },
    async setStrategySchemaVersion(store, scope, version, schemaVersion) {
      db(store)
        .prepare('UPDATE strategies SET schema_version = ? WHERE scope = ? AND version = ?')
        .run(schemaVersion, scope, version);
    },
    async setAlarmBody(store, c, seq, ruleId, indicatorKey, body) {
      db(store)
        .prepare(
          'UPDATE alarms SET body = ? WHERE tool_id = ? AND chamber_id = ? AND seq = ? AND rule_id = ? AND indicator_key = ?',
        )
        .run(body, c.toolId, c.chamberId, seq, ruleId, indicatorKey);
    },
    async deleteTraceChunk(store, r: RunRef, kind: SeriesKind, series, chunk) {
      db(store)
        .prepare(
          'DELETE FROM trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ? AND series_kind = ? AND series = ? AND chunk = ?',
        )
        .run(r.toolId, r.chamberId, r.runId, kind, series, chunk);
    },
    async setTraceChunkData(store, r, kind, series, chunk, data) {
      db(store)
        .prepare(
          'UPDATE trace_chunks SET data = ? WHERE tool_id = ? AND chamber_id = ? AND run_id = ? AND series_kind = ? AND series = ? AND chunk = ?',
        )
        .run(data, r.toolId, r.chamberId, r.runId, kind, series, chunk);
    },
    async setTraceChunkWriteId(store, r, kind, series, chunk, writeId) {
      db(store)
        .prepare(
          'UPDATE trace_chunks SET write_id = ? WHERE tool_id = ? AND chamber_id = ? AND run_id = ? AND series_kind = ? AND series = ? AND chunk = ?',
        )
        .run(writeId, r.toolId, r.chamberId, r.runId, kind, series, chunk);
    },
    async setTraceManifest(store, r, manifest) {
      db(store)
        .prepare(
          'UPDATE trace_manifests SET manifest = ? WHERE tool_id = ? AND chamber_id = ? AND run_id = ?',
        )
        .run(manifest, r.toolId, r.chamberId, r.runId);
    },
  };
}
