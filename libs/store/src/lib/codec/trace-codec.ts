import { randomUUID } from 'node:crypto';
import { endianness } from 'node:os';
import { crc32 } from 'node:zlib';
import { z } from 'zod';
import {
  CorruptRecordError,
  TornTraceError,
  UnknownSchemaVersionError,
  type RecordContext,
  type RunRef,
  type SampleArray,
  type TraceRecord,
} from '@defender/contracts';
import { freeArrayBuffer, type TraceBufferPool } from './trace-buffer-pool';

/**
 * Trace layout shared by both adapters: every series (each SVID, plus explicit sample times) is
 * stored as its raw little-endian bytes cut into chunks of at most `chunkBytes` (1 MiB), each with
 * its byte length and CRC-32 and the id of the write it belongs to. A JSON manifest, written last,
 * lists the series (kind, name, element type, chunk count, byte count) and carries the timing and
 * steps. A reader checks every chunk against the manifest, so a missing, short, damaged or foreign
 * chunk is a {@link TornTraceError}, never zeros.
 */
export const TRACE_SCHEMA_VERSION = 1;
/** Largest chunk the adapters write (and the default). */
export const MAX_TRACE_CHUNK_BYTES = 1 << 20;

/** 0: explicit sample times; 1: an SVID. Part of the chunk key. */
export type SeriesKind = 0 | 1;
export const SERIES_TIME: SeriesKind = 0;
export const SERIES_SVID: SeriesKind = 1;

const seriesSchema = z.object({
  kind: z.union([z.literal(0), z.literal(1)]),
  name: z.string(),
  dtype: z.enum(['f64', 'f32']),
  chunks: z.number().int().min(0),
  bytes: z.number().int().min(0),
});

const manifestSchema = z.object({
  v: z.literal(TRACE_SCHEMA_VERSION),
  writeId: z.string().min(1),
  length: z.number().int().min(0),
  chunkBytes: z.number().int().min(8).max(MAX_TRACE_CHUNK_BYTES),
  timing: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('regular'), startSeconds: z.number(), frequencyHz: z.number().positive() }),
    z.object({ kind: z.literal('explicit') }),
  ]),
  steps: z.array(z.object({ name: z.string(), startIndex: z.number().int().min(0) })),
  recipe: z.string().optional(),
  series: z.array(seriesSchema).min(1),
});

/** The manifest of one stored trace (JSON, written after all chunks). */
export type TraceManifest = z.infer<typeof manifestSchema>;
export type ManifestSeries = z.infer<typeof seriesSchema>;

/** One stored chunk as the adapters persist it. */
export interface TraceChunk {
  readonly seriesKind: SeriesKind;
  readonly series: string;
  readonly chunk: number;
  readonly writeId: string;
  readonly byteLength: number;
  /** CRC-32 of `data` as an unsigned 32-bit integer. */
  readonly crc32: number;
  readonly data: Buffer;
}

/** What a write consists of: the manifest and the chunks (views of the caller's arrays, not copies). */
export interface TraceWritePlan {
  readonly manifest: TraceManifest;
  readonly chunkCount: number;
  readonly bytes: number;
  chunks(): Generator<TraceChunk>;
}

function requireLittleEndian(): void {
  // The stored layout is little-endian and typed arrays use host order; no supported platform is big-endian.
  if (endianness() !== 'LE') throw new Error('trace storage requires a little-endian host');
}

function dtypeOf(a: SampleArray): 'f64' | 'f32' {
  return a instanceof Float64Array ? 'f64' : 'f32';
}

/**
 * Cuts a (validated) trace into chunks.
 * @param chunkBytes chunk size, a multiple of 8 in 8..1 MiB.
 */
export function planTraceWrite(trace: TraceRecord, chunkBytes = MAX_TRACE_CHUNK_BYTES, writeId: string = randomUUID()): TraceWritePlan {
  requireLittleEndian();
  if (!(Number.isInteger(chunkBytes) && chunkBytes >= 8 && chunkBytes <= MAX_TRACE_CHUNK_BYTES && chunkBytes % 8 === 0)) {
    throw new RangeError(`chunkBytes must be a multiple of 8 in 8..${MAX_TRACE_CHUNK_BYTES}, got ${chunkBytes}`);
  }
  const arrays: { kind: SeriesKind; name: string; array: SampleArray }[] = [];
  if (trace.timing.kind === 'explicit') arrays.push({ kind: SERIES_TIME, name: 'time', array: trace.timing.timesSeconds });
  for (const [name, array] of trace.svids) arrays.push({ kind: SERIES_SVID, name, array });
  const length = arrays[arrays.length - 1]?.array.length ?? 0;
  const series: ManifestSeries[] = arrays.map(({ kind, name, array }) => ({
    kind,
    name,
    dtype: dtypeOf(array),
    chunks: Math.ceil(array.byteLength / chunkBytes),
    bytes: array.byteLength,
  }));
  const manifest: TraceManifest = {
    v: TRACE_SCHEMA_VERSION,
    writeId,
    length,
    chunkBytes,
    timing:
      trace.timing.kind === 'regular'
        ? { kind: 'regular', startSeconds: trace.timing.startSeconds, frequencyHz: trace.timing.frequencyHz }
        : { kind: 'explicit' },
    steps: trace.steps.map((s) => ({ name: s.name, startIndex: s.startIndex })),
    ...(trace.recipe !== undefined ? { recipe: trace.recipe } : {}),
    series,
  };
  return {
    manifest,
    chunkCount: series.reduce((n, s) => n + s.chunks, 0),
    bytes: series.reduce((n, s) => n + s.bytes, 0),
    *chunks() {
      for (const { kind, name, array } of arrays) {
        const bytes = Buffer.from(array.buffer, array.byteOffset, array.byteLength);
        for (let i = 0, off = 0; off < bytes.length; i++, off += chunkBytes) {
          const data = bytes.subarray(off, Math.min(off + chunkBytes, bytes.length));
          yield { seriesKind: kind, series: name, chunk: i, writeId, byteLength: data.length, crc32: crc32(data), data };
        }
      }
    },
  };
}

/**
 * Parses a stored manifest.
 * @throws UnknownSchemaVersionError / CorruptRecordError (`malformed`) with the run in the context.
 */
export function parseTraceManifest(json: string, context: RecordContext): TraceManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new CorruptRecordError('malformed', { ...context, column: 'manifest' }, 'manifest is not valid JSON (truncated?)', { cause: err });
  }
  const v = (raw as { v?: unknown } | null)?.v;
  if (v !== TRACE_SCHEMA_VERSION) throw new UnknownSchemaVersionError({ ...context, column: 'manifest' }, v, [TRACE_SCHEMA_VERSION]);
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success) {
    throw new CorruptRecordError('malformed', { ...context, column: 'manifest' }, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  }
  const m = parsed.data;
  for (const s of m.series) {
    const size = s.dtype === 'f64' ? 8 : 4;
    if (s.bytes !== m.length * size || s.chunks !== Math.ceil(s.bytes / m.chunkBytes)) {
      throw new CorruptRecordError('malformed', { ...context, column: 'manifest', series: s.name }, `series of ${s.bytes} bytes in ${s.chunks} chunks does not fit ${m.length} ${s.dtype} samples`);
    }
  }
  return m;
}

/** Serializes a manifest for storage. */
export function stringifyTraceManifest(m: TraceManifest): string {
  return JSON.stringify(m);
}

interface Target {
  readonly meta: ManifestSeries;
  readonly array: SampleArray;
  readonly bytes: Uint8Array;
  readonly seen: Uint8Array;
}

const alignTo8 = (n: number) => Math.ceil(n / 8) * 8;

/** Where a trace buffer goes when its trace is released: back to the pool it was leased from, or freed. */
export type TraceBufferHome = (buffer: ArrayBuffer) => void;

/**
 * The buffers of traces a {@link TraceAssembler} built (or that moved here from the thread that built
 * them), each with where it goes back to: the only ones {@link releaseTraceMemory} gives back.
 */
const traceBufferHomes = new WeakMap<ArrayBuffer, TraceBufferHome>();

/** Hands a trace buffer this module built to another thread: true (and no longer owned here) when it was one. */
export function disownTraceBuffer(buffer: ArrayBuffer): boolean {
  return traceBufferHomes.delete(buffer);
}

/**
 * Takes over a trace buffer built by another thread's store (moved here), so {@link releaseTraceMemory}
 * sends it home (e.g. back to that thread's pool), or frees it when no home is given.
 */
export function adoptTraceBuffer(buffer: ArrayBuffer, home: TraceBufferHome = freeArrayBuffer): void {
  traceBufferHomes.set(buffer, home);
}

/**
 * Gives the sample memory of a trace read from the store back, now: to the buffer pool it was leased
 * from (reused by the next read), or freed when it had none. Returns how many bytes it gave back. The
 * caller must own the trace and be done with it: afterwards its arrays are empty (length 0), so a use
 * after release fails instead of reading another run's samples. The bytes counted are the trace's
 * samples (its arrays), not the size of the pooled buffer they were in.
 *
 * Only buffers of a {@link TraceAssembler} are given back (never one a caller built, or a Buffer
 * pool); a second call gives back nothing.
 */
export function releaseTraceMemory(trace: TraceRecord): number {
  const arrays: SampleArray[] = [...trace.svids.values()];
  if (trace.timing.kind === 'explicit') arrays.push(trace.timing.timesSeconds);
  // The sample bytes of the arrays on each buffer, counted before the buffer goes (its views then read empty).
  const bytesOf = new Map<ArrayBufferLike, number>();
  for (const a of arrays) bytesOf.set(a.buffer, (bytesOf.get(a.buffer) ?? 0) + a.byteLength);
  let bytes = 0;
  for (const [b, n] of bytesOf) {
    // (The tag, not instanceof: a buffer moved from the store thread may come from another realm under jest.)
    if (Object.prototype.toString.call(b) !== '[object ArrayBuffer]') continue;
    const home = traceBufferHomes.get(b as ArrayBuffer);
    if (!home) continue;
    traceBufferHomes.delete(b as ArrayBuffer);
    bytes += n;
    home(b as ArrayBuffer);
  }
  return bytes;
}

/**
 * Rebuilds a trace from its manifest and chunk rows (in any order), verifying each chunk.
 * Chunks of an earlier write of the same run beyond the current layout are ignored; any chunk the
 * current manifest needs must come from the same write.
 */
export class TraceAssembler {
  private readonly targets = new Map<string, Target>();
  private readonly context: RecordContext;
  private readonly buffer: ArrayBuffer;

  /**
   * @param pool where the trace's buffer is leased from and goes back to on release; without one
   *   the buffer is allocated for this trace and freed on release.
   */
  constructor(
    private readonly run: RunRef,
    private readonly manifest: TraceManifest,
    pool?: TraceBufferPool,
  ) {
    requireLittleEndian();
    this.context = { chamber: { toolId: run.toolId, chamberId: run.chamberId }, runId: run.runId };
    // Every series in one buffer (8-byte aligned), given back whole by releaseTraceMemory. A pooled
    // buffer holds the previous trace's bytes: every series is overwritten whole (finish() checks
    // that every chunk came), and the bytes beyond the series are in no view.
    let total = 0;
    for (const meta of manifest.series) total += alignTo8(manifest.length * (meta.dtype === 'f64' ? 8 : 4));
    const buffer = pool ? pool.lease(total) : new ArrayBuffer(total);
    traceBufferHomes.set(buffer, pool ? (b) => pool.give(b) : freeArrayBuffer);
    this.buffer = buffer;
    let offset = 0;
    for (const meta of manifest.series) {
      const array = meta.dtype === 'f64' ? new Float64Array(buffer, offset, manifest.length) : new Float32Array(buffer, offset, manifest.length);
      offset += alignTo8(array.byteLength);
      this.targets.set(`${meta.kind}\u0000${meta.name}`, {
        meta,
        array,
        bytes: new Uint8Array(array.buffer, array.byteOffset, array.byteLength),
        seen: new Uint8Array(meta.chunks),
      });
    }
  }

  /** Verifies and places one chunk. @throws TornTraceError */
  add(c: TraceChunk): void {
    const target = this.targets.get(`${c.seriesKind}\u0000${c.series}`);
    const ctx: RecordContext = { ...this.context, series: c.series, chunk: c.chunk, table: 'trace_chunks' };
    if (!target || c.chunk >= target.meta.chunks) {
      if (c.writeId === this.manifest.writeId) throw new TornTraceError('malformed', ctx, 'chunk of this write is not in its manifest');
      return; // left over from an earlier, larger write of the same run
    }
    if (c.writeId !== this.manifest.writeId) {
      throw new TornTraceError('torn-write', { ...ctx, column: 'write_id' }, `chunk belongs to write ${c.writeId}, manifest to ${this.manifest.writeId}`);
    }
    const { chunkBytes } = this.manifest;
    const expected = Math.min(chunkBytes, target.meta.bytes - c.chunk * chunkBytes);
    if (c.data.length !== c.byteLength || c.data.length !== expected) {
      throw new TornTraceError('truncated', { ...ctx, column: 'data' }, `chunk has ${c.data.length} bytes, recorded ${c.byteLength}, expected ${expected}`);
    }
    if (crc32(c.data) !== c.crc32 >>> 0) throw new TornTraceError('checksum-mismatch', { ...ctx, column: 'data' }, 'chunk CRC-32 does not match');
    target.bytes.set(c.data, c.chunk * chunkBytes);
    target.seen[c.chunk] = 1;
  }

  /** Gives the trace's buffer back (to its pool) when the read failed and no trace will be returned. */
  abandon(): void {
    const home = traceBufferHomes.get(this.buffer);
    if (!home) return;
    traceBufferHomes.delete(this.buffer);
    home(this.buffer);
  }

  /** @throws TornTraceError naming the first missing chunk. */
  finish(): TraceRecord {
    const svids = new Map<string, SampleArray>();
    let times: Float64Array | undefined;
    for (const t of this.targets.values()) {
      const missing = t.seen.indexOf(0);
      if (missing >= 0) {
        throw new TornTraceError('missing-chunk', { ...this.context, table: 'trace_chunks', series: t.meta.name, chunk: missing }, `chunk ${missing} of ${t.meta.chunks} is missing`);
      }
      if (t.meta.kind === SERIES_TIME) {
        if (!(t.array instanceof Float64Array)) throw new TornTraceError('malformed', { ...this.context, column: 'manifest' }, 'explicit times must be f64');
        times = t.array;
      } else svids.set(t.meta.name, t.array);
    }
    const m = this.manifest;
    let timing: TraceRecord['timing'];
    if (m.timing.kind === 'regular') timing = { kind: 'regular', startSeconds: m.timing.startSeconds, frequencyHz: m.timing.frequencyHz };
    else {
      if (!times) throw new TornTraceError('malformed', { ...this.context, column: 'manifest' }, 'explicit timing without a time series');
      timing = { kind: 'explicit', timesSeconds: times };
    }
    return {
      toolId: this.run.toolId,
      chamberId: this.run.chamberId,
      runId: this.run.runId,
      timing,
      svids,
      steps: m.steps,
      ...(m.recipe !== undefined ? { recipe: m.recipe } : {}),
    };
  }
}
