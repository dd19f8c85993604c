import {
  TraceNotFoundError,
  validateRunRef,
  validateTraceRecord,
  type RunRef,
  type TraceRecord,
  type TraceRepository,
  type TraceWriteSummary,
} from '@defender/contracts';
import { releaseDriverBuffer } from '../codec/buffer-release';
import { TraceBufferPool } from '../codec/trace-buffer-pool';
import { parseTraceManifest, planTraceWrite, stringifyTraceManifest, TraceAssembler, type SeriesKind } from '../codec/trace-codec';
import { Conn, type SqlRow, chamberOf } from './sqlite-conn';

export class SqliteTraces implements TraceRepository {
  constructor(
    private readonly c: Conn,
    private readonly chunkBytes: number,
    /** The buffers traces are read into (given back by releaseTraceMemory). */
    readonly pool: TraceBufferPool,
  ) {}

  write(trace: TraceRecord): Promise<TraceWriteSummary> {
    return this.c.op('traces.write', 'write', () => {
      validateTraceRecord(trace);
      const plan = planTraceWrite(trace, this.chunkBytes);
      const pk = [trace.toolId, trace.chamberId, trace.runId];
      this.c.write(() => {
        this.c.sql('DELETE FROM trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').run(...pk);
        const insert = this.c.sql(
          'INSERT INTO trace_chunks (tool_id, chamber_id, run_id, series_kind, series, chunk, write_id, byte_length, crc32, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        );
        for (const ch of plan.chunks()) insert.run(...pk, ch.seriesKind, ch.series, ch.chunk, ch.writeId, ch.byteLength, ch.crc32, ch.data);
        this.c.sql('INSERT OR REPLACE INTO trace_manifests (tool_id, chamber_id, run_id, manifest) VALUES (?, ?, ?, ?)').run(...pk, stringifyTraceManifest(plan.manifest));
      });
      return { length: plan.manifest.length, svidCount: trace.svids.size, chunks: plan.chunkCount, bytes: plan.bytes };
    });
  }

  read(run: RunRef): Promise<TraceRecord> {
    return this.c.op('traces.read', 'read', () => {
      validateRunRef(run);
      const pk = [run.toolId, run.chamberId, run.runId];
      // One read transaction: manifest and chunks come from the same snapshot.
      return this.c.db.transaction(() => {
        const head = this.c.sql('SELECT manifest FROM trace_manifests WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').get(...pk) as SqlRow | undefined;
        if (!head || typeof head['manifest'] !== 'string') throw new TraceNotFoundError(chamberOf(run), run.runId);
        const manifest = parseTraceManifest(head['manifest'], { chamber: chamberOf(run), runId: run.runId, table: 'trace_manifests' });
        const assembler = new TraceAssembler(run, manifest, this.pool);
        try {
          const rows = this.c
            .sql('SELECT series_kind, series, chunk, write_id, byte_length, crc32, data FROM trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ?')
            .iterate(...pk) as IterableIterator<SqlRow>;
          for (const r of rows) {
            const data = Buffer.isBuffer(r['data']) ? r['data'] : Buffer.alloc(0);
            assembler.add({
              seriesKind: r['series_kind'] as SeriesKind,
              series: r['series'] as string,
              chunk: r['chunk'] as number,
              writeId: r['write_id'] as string,
              byteLength: r['byte_length'] as number,
              crc32: r['crc32'] as number,
              data,
            });
            // The driver's copy of the chunk (its own buffer, now copied into the trace) is freed now:
            // a trace's chunk copies would otherwise pile up until the next young collection.
            releaseDriverBuffer(data);
          }
          return assembler.finish();
        } catch (err) {
          assembler.abandon();
          throw err;
        }
      })();
    });
  }

  delete(run: RunRef): Promise<void> {
    return this.c.op('traces.delete', 'write', () => {
      validateRunRef(run);
      this.c.write(() => {
        this.c.sql('DELETE FROM trace_manifests WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').run(run.toolId, run.chamberId, run.runId);
        this.c.sql('DELETE FROM trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').run(run.toolId, run.chamberId, run.runId);
      });
    });
  }
}
