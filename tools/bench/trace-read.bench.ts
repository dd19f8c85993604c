// bench:trace-read — what reading one trace from a SQLite store costs, in process, by trace shape,
// chunk size, trace buffers (pooled or one per read) and C allocator setting. Each case runs in a child process of its own, because glibc
// reads MALLOC_MMAP_THRESHOLD_ only when a process starts: once with glibc's default (a threshold that
// rises as large blocks are freed) and once with the defender image's fixed 128 KiB
// (apps/defender/Dockerfile). Writes the `trace-read` section of docs/benchmarks.md.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TRACE_POOL_BYTES, MAX_TRACE_CHUNK_BYTES, releaseTraceMemory, SqliteStore } from '@defender/store';
import { envInt, handleBenchCommandLine } from './cli';
import { percentile, table, writeBenchmarkSection } from './report';

handleBenchCommandLine(`Usage: npm run bench:trace-read

Reads traces back from a SQLite file (WAL, checkpointed) through SqliteStore, in process: the cost
of one trace read (query, chunk copies, CRC-32 checks, assembly) by trace shape, trace chunk size
(64 KiB, the default, and 1 MiB), trace buffers (the store's pool, the default, or a buffer of its own
per read: tracePoolBytes 0) and C allocator setting (glibc's default, and the defender image's
MALLOC_MMAP_THRESHOLD_=131072). Writes the trace-read section of docs/benchmarks.md.

Environment:
  TRACE_READ_RUNS=<n>  traces written and read per case (typical shapes; heavy ones read a tenth) (200)
  TRACE_READ_WRITE=0   do not write docs/benchmarks.md
  BENCH_QUICK=1        20 traces per case, no docs

Options:
  -h, --help          this text
`);

interface Shape {
  readonly label: string;
  readonly svids: number;
  readonly samples: number;
  readonly dtype: 'f32' | 'f64';
  readonly heavy: boolean;
}

const SHAPES: readonly Shape[] = [
  { label: 'typical: 100 SVIDs x 1,200 samples, f32 (0.5 MB)', svids: 100, samples: 1_200, dtype: 'f32', heavy: false },
  { label: "fab mean: 100 SVIDs x 4,000 samples, f32 (1.6 MB; bench:fab's mean run)", svids: 100, samples: 4_000, dtype: 'f32', heavy: false },
  { label: 'heavy: 200 SVIDs x 18,000 samples, f64 (28.8 MB; 144 KB per SVID)', svids: 200, samples: 18_000, dtype: 'f64', heavy: true },
];
const CHUNKS = [64 * 1024, MAX_TRACE_CHUNK_BYTES] as const;
const POOLS = [
  { label: 'one per read', bytes: 0 },
  { label: `pooled (${DEFAULT_TRACE_POOL_BYTES / 1024 / 1024} MiB)`, bytes: DEFAULT_TRACE_POOL_BYTES },
] as const;
const MALLOC = [
  { label: "glibc's default", env: {} as Record<string, string> },
  { label: 'image: MALLOC_MMAP_THRESHOLD_=131072', env: { MALLOC_MMAP_THRESHOLD_: '131072' } },
] as const;

interface CaseResult {
  readonly reads: number;
  readonly p50Ms: number;
  readonly meanMs: number;
  readonly cpuUserMs: number;
  readonly cpuSysMs: number;
}

/** One case, in this process: write `runs` traces, checkpoint, read each once (after one warm-up read). */
async function runCase(shape: Shape, chunkBytes: number, poolBytes: number, runs: number): Promise<CaseResult> {
  const dir = mkdtempSync(join(tmpdir(), 'defender-bench-trace-read-'));
  const store = await SqliteStore.open({ filename: join(dir, 'traces.db'), traceChunkBytes: chunkBytes, tracePoolBytes: poolBytes });
  try {
    const Arr = shape.dtype === 'f64' ? Float64Array : Float32Array;
    const svids = new Map<string, Float32Array | Float64Array>();
    for (let s = 0; s < shape.svids; s++) {
      const values = new Arr(shape.samples);
      for (let i = 0; i < values.length; i++) values[i] = Math.sin(i * 0.01 + s);
      svids.set(`SVID_${String(s).padStart(4, '0')}`, values);
    }
    const ref = (r: number) => ({ toolId: 'TOOL_0001', chamberId: 'CH_A', runId: `run-${r}` });
    for (let r = 0; r < runs; r++) await store.traces.write({ ...ref(r), timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 }, svids, steps: [] });
    store.database.pragma('wal_checkpoint(TRUNCATE)');
    releaseTraceMemory(await store.traces.read(ref(0)));
    const times: number[] = [];
    const cpu0 = process.cpuUsage();
    for (let r = 0; r < runs; r++) {
      const t0 = performance.now();
      const trace = await store.traces.read(ref(r));
      times.push(performance.now() - t0);
      releaseTraceMemory(trace);
    }
    const cpu = process.cpuUsage(cpu0);
    return {
      reads: runs,
      p50Ms: percentile(times, 50),
      meanMs: times.reduce((a, b) => a + b, 0) / runs,
      cpuUserMs: cpu.user / 1000 / runs,
      cpuSysMs: cpu.system / 1000 / runs,
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const CHILD = process.env['TRACE_READ_CASE'];

async function main(): Promise<void> {
  if (CHILD) {
    const { shape, chunkBytes, poolBytes, runs } = JSON.parse(CHILD) as { shape: Shape; chunkBytes: number; poolBytes: number; runs: number };
    process.stdout.write(`${JSON.stringify(await runCase(shape, chunkBytes, poolBytes, runs))}\n`);
    return;
  }
  const quick = process.env['BENCH_QUICK'] === '1';
  const runs = quick ? 20 : envInt('TRACE_READ_RUNS', 200, 10);
  const write = !quick && process.env['TRACE_READ_WRITE'] !== '0';
  const started = performance.now();
  const rows: string[][] = [];
  for (const shape of SHAPES) {
    for (const chunkBytes of CHUNKS) {
      for (const pool of POOLS) {
        for (const malloc of MALLOC) {
          const n = shape.heavy ? Math.max(5, Math.round(runs / 10)) : runs;
          const out = execFileSync(process.execPath, [...process.execArgv, __filename], {
            env: { ...process.env, ...malloc.env, TRACE_READ_CASE: JSON.stringify({ shape, chunkBytes, poolBytes: pool.bytes, runs: n }) },
            encoding: 'utf8',
            maxBuffer: 1 << 20,
          });
          const r = JSON.parse(out.trim().split('\n').pop() ?? '{}') as CaseResult;
          const row = [shape.label, `${chunkBytes / 1024} KiB`, pool.label, malloc.label, String(r.reads), r.p50Ms.toFixed(2), r.meanMs.toFixed(2), (r.cpuUserMs + r.cpuSysMs).toFixed(2), r.cpuSysMs.toFixed(2)];
          rows.push(row);
          process.stdout.write(`${row.join(' | ')}\n`);
        }
      }
    }
  }
  const header = ['trace', 'chunk size', 'trace buffers', 'C allocator', 'reads', 'read p50 ms', 'mean ms', 'CPU ms / read', 'of which system'];
  const seconds = (performance.now() - started) / 1000;
  if (write) {
    writeBenchmarkSection(
      'trace-read',
      'Trace reads from SQLite: chunk size, trace buffers and the C allocator',
      'npm run bench:trace-read',
      [
        `One SqliteStore in process (the store thread's work without the thread hop), a file in WAL mode, checkpointed after the writes so the reads come from the database file (in the OS page cache). Each case in a process of its own: glibc reads \`MALLOC_MMAP_THRESHOLD_\` at start. A read is the query, the chunk copies (SQLite's and the driver's Buffer per chunk, each freed once copied), the length and CRC-32 checks and the copy into one buffer for the whole trace; the trace is released after each read, as the defender does: back to the store's pool of trace buffers, or freed when it had its own buffer (\`tracePoolBytes: 0\`). Series are stored in chunks of at most the chunk size each (a series shorter than a chunk is one chunk). CPU from \`process.cpuUsage\` (the process's threads, GC included). ${seconds.toFixed(0)} s in total.`,
        '',
        table(header, rows),
        '',
        "A trace buffer of its own per read is a fresh allocation of the whole trace (MBs: zero-filled, faulted in page by page, unmapped when freed); a pooled one is the buffer the last released trace of its size class left, already resident. With the image's fixed 128 KiB threshold every chunk copy of 128 KiB or more is also a fresh mapping of its own; chunks of 64 KiB come from the C heap and reuse its pages. So SQLite stores write 64 KiB chunks by default (ADR 0010, addendum 2) and read into pooled buffers (issue 24).",
      ].join('\n'),
    );
    process.stdout.write('wrote the trace-read section of docs/benchmarks.md\n');
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
