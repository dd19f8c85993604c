import {
  TraceNotFoundError,
  validateRunRef,
  validateTraceRecord,
  type RunRef,
  type TraceRecord,
  type TraceRepository,
  type TraceWriteSummary,
} from '@defender/contracts';
import { TraceBufferPool } from '../codec/trace-buffer-pool';
import {
  parseTraceManifest,
  planTraceWrite,
  SERIES_SVID,
  SERIES_TIME,
  stringifyTraceManifest,
  TraceAssembler,
  type ManifestSeries,
  type SeriesKind,
} from '../codec/trace-codec';
import { runPool } from '../pool';
import { Session, chamberOf } from './cassandra-session';

export class CassandraTraces implements TraceRepository {
  constructor(
    private readonly s: Session,
    private readonly chunkBytes: number,
    private readonly writeConcurrency: number,
    private readonly readConcurrency: number,
    /** The buffers traces are read into (given back by releaseTraceMemory). */
    readonly pool: TraceBufferPool,
  ) {}

  write(trace: TraceRecord): Promise<TraceWriteSummary> {
    return this.s.op('traces.write', 'write', async () => {
      validateTraceRecord(trace);
      const plan = planTraceWrite(trace, this.chunkBytes);
      const pk = [trace.toolId, trace.chamberId, trace.runId];
      const insert = `INSERT INTO ${this.s.ks}.trace_chunks (tool_id, chamber_id, run_id, series_kind, series, chunk, write_id, byte_length, crc32, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
      await runPool(plan.chunks(), this.writeConcurrency, (c) =>
        this.s.exec(insert, [...pk, c.seriesKind, c.series, c.chunk, c.writeId, c.byteLength, c.crc32 | 0, c.data]),
      );
      // The manifest is the commit point of the write: readers ignore chunks without one.
      await this.s.exec(`INSERT INTO ${this.s.ks}.trace_chunks (tool_id, chamber_id, run_id, manifest) VALUES (?, ?, ?, ?)`, [
        ...pk,
        stringifyTraceManifest(plan.manifest),
      ]);
      return { length: plan.manifest.length, svidCount: trace.svids.size, chunks: plan.chunkCount, bytes: plan.bytes };
    });
  }

  read(run: RunRef): Promise<TraceRecord> {
    return this.s.op('traces.read', 'read', async () => {
      validateRunRef(run);
      const pk = [run.toolId, run.chamberId, run.runId];
      const head = (
        await this.s.exec(`SELECT manifest FROM ${this.s.ks}.trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ? LIMIT 1`, pk)
      ).first();
      const json: unknown = head?.get('manifest');
      if (typeof json !== 'string') throw new TraceNotFoundError(chamberOf(run), run.runId);
      const manifest = parseTraceManifest(json, { chamber: chamberOf(run), runId: run.runId, table: 'trace_chunks' });
      const assembler = new TraceAssembler(run, manifest, this.pool);
      try {
        // Parallel queries over groups of series of about equal size; each page holds ~4 MiB.
        const groups = groupSeries(manifest.series, this.readConcurrency);
        const avgChunk = Math.max(1, Math.min(manifest.chunkBytes, Math.ceil(manifest.series.reduce((n, s) => n + s.bytes, 0) / Math.max(1, manifest.series.reduce((n, s) => n + s.chunks, 0)))));
        const fetchSize = Math.max(1, Math.floor((4 << 20) / avgChunk));
        const query = `SELECT series_kind, series, chunk, write_id, byte_length, crc32, data FROM ${this.s.ks}.trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ? AND series_kind = ? AND series IN ?`;
        await runPool(groups, this.readConcurrency, async (g) => {
          let pageState: string | undefined;
          do {
            const rs = await this.s.exec(query, [...pk, g.kind, g.names], { fetchSize, ...(pageState ? { pageState } : {}) });
            for (const r of rs.rows) {
              assembler.add({
                seriesKind: r.get('series_kind') as SeriesKind,
                series: r.get('series') as string,
                chunk: r.get('chunk') as number,
                writeId: r.get('write_id') as string,
                byteLength: r.get('byte_length') as number,
                crc32: r.get('crc32') as number,
                data: (r.get('data') as Buffer | null) ?? Buffer.alloc(0),
              });
            }
            pageState = rs.pageState ?? undefined;
          } while (pageState);
        });
        return assembler.finish();
      } catch (err) {
        assembler.abandon();
        throw err;
      }
    });
  }

  delete(run: RunRef): Promise<void> {
    return this.s.op('traces.delete', 'write', async () => {
      validateRunRef(run);
      await this.s.exec(`DELETE FROM ${this.s.ks}.trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ?`, [run.toolId, run.chamberId, run.runId]);
    });
  }
}

/** Splits a manifest's series into about `parts` groups of similar byte size, one kind per group. */
function groupSeries(series: readonly ManifestSeries[], parts: number): { kind: SeriesKind; names: string[] }[] {
  const groups: { kind: SeriesKind; names: string[] }[] = [];
  for (const kind of [SERIES_TIME, SERIES_SVID]) {
    const of = series.filter((s) => s.kind === kind);
    if (of.length === 0) continue;
    const total = of.reduce((n, s) => n + s.bytes, 0);
    const target = Math.max(1, Math.ceil(total / parts));
    let current: string[] = [];
    let bytes = 0;
    for (const s of of) {
      current.push(s.name);
      bytes += s.bytes;
      if (bytes >= target) {
        groups.push({ kind, names: current });
        current = [];
        bytes = 0;
      }
    }
    if (current.length > 0) groups.push({ kind, names: current });
  }
  return groups;
}

/**
 * `chamber_log`: ownership, committed runs and alarms of a chamber in one partition, so a run's
 * results, the high-water mark and the owner epoch change in one single-partition conditional batch.
 */
