// Store throughput (issue: store). Writes the `store` section of docs/benchmarks.md: write and read
// of 30 K / 120 K / 3.6 M-point traces and of a U-chart history (last 100 runs x 50 indicators),
// for the Cassandra and the SQLite adapter. Target: a 3.6 M-point trace read from a local Cassandra
// well under 1 s.
// Run: npm run bench:store   (starts a private Cassandra unless CASSANDRA_HOSTS is set)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'cassandra-driver';
import type { DefenderStore, RunPointSet, SampleArray, TraceRecord, UChartPoint } from '@defender/contracts';
import { startCassandra, type CassandraHandle } from '@defender/infra-harness';
import { CassandraStore, SqliteStore, UChartHistoryCache } from '@defender/store';
import { percentile, table, writeBenchmarkSection } from './report';
import { handleBenchCommandLine } from './cli';

handleBenchCommandLine(`Usage: npm run bench:store

Store throughput: write and read of 30 K / 120 K / 3.6 M-point traces and of a U-chart history, for
the Cassandra and the SQLite adapter. Writes the \`store\` section of docs/benchmarks.md.

Environment:
  CASSANDRA_HOSTS     use this Cassandra (else a private node from the test harness is started)

Options:
  -h, --help          this text
`);

const READ_TARGET_MS = 1000;

interface Shape {
  name: string;
  svids: number;
  hz: number;
  seconds: number;
  iterations: number;
}

// The seeds' chamber classes: weight = SVIDs x Hz x seconds (as in the uchart bench).
const SHAPES: Shape[] = [
  { name: '30 K (50 SVIDs x 1 Hz x 600 s)', svids: 50, hz: 1, seconds: 600, iterations: 30 },
  { name: '120 K (100 SVIDs x 1 Hz x 1,200 s)', svids: 100, hz: 1, seconds: 1200, iterations: 20 },
  { name: '3.6 M (200 SVIDs x 10 Hz x 1,800 s)', svids: 200, hz: 10, seconds: 1800, iterations: 8 },
];
const HISTORY_RUNS = 100;
const HISTORY_INDICATORS = 50;
const HISTORY_READS = 50;

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Deterministic sensor-like float64 data: offset + drift + noise (xorshift32), a NaN now and then. */
function makeTrace(shape: Shape, runId: string): TraceRecord {
  const n = shape.hz * shape.seconds;
  let s = 0x9e3779b9;
  const rnd = (): number => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  const svids = new Map<string, SampleArray>();
  for (let j = 0; j < shape.svids; j++) {
    const a = new Float64Array(n);
    for (let i = 0; i < n; i++) a[i] = i % 997 === 13 ? NaN : 100 * (j + 1) + 1e-3 * i + (rnd() - 0.5);
    svids.set(`svid-${String(j).padStart(3, '0')}`, a);
  }
  return {
    toolId: 'bench',
    chamberId: `C${shape.svids}`,
    runId,
    timing: { kind: 'regular', startSeconds: 0, frequencyHz: shape.hz },
    svids,
    steps: [
      { name: 'stabilize', startIndex: 0 },
      { name: 'main', startIndex: Math.floor(n / 4) },
    ],
  };
}

function historyPoints(seq: number): UChartPoint[] {
  return Array.from({ length: HISTORY_INDICATORS }, (_, i) => ({
    indicatorKey: `recipe-A|step:main|svid-${String(i).padStart(3, '0')}|mean`,
    value: 100 + i + Math.sin(seq + i),
    flags: 0,
    limitsVersion: 1,
    ...(i % 5 === 0 ? { chart: { ewma: 100 + i } } : {}),
  }));
}

const ms = (x: number): string => x.toFixed(x < 10 ? 2 : 1);

interface TraceResult {
  store: string;
  shape: Shape;
  write: number[];
  read: number[];
  bytes: number;
}

interface HistoryResult {
  store: string;
  commit: number[];
  read: number[];
  cacheHit: number[];
}

async function benchTraces(label: string, store: DefenderStore): Promise<TraceResult[]> {
  const out: TraceResult[] = [];
  for (const shape of SHAPES) {
    const trace = makeTrace(shape, 'warmup');
    const bytes = [...trace.svids.values()].reduce((n, a) => n + a.byteLength, 0);
    await store.traces.write(trace);
    await store.traces.read(trace);
    const write: number[] = [];
    const read: number[] = [];
    for (let i = 0; i < shape.iterations; i++) {
      const t = { ...trace, runId: `run-${i}` };
      gc();
      const t0 = performance.now();
      await store.traces.write(t);
      write.push(performance.now() - t0);
    }
    for (let i = 0; i < shape.iterations; i++) {
      gc();
      const t0 = performance.now();
      const back = await store.traces.read({ ...trace, runId: `run-${i}` });
      read.push(performance.now() - t0);
      if (back.svids.size !== shape.svids) throw new Error('short read');
    }
    log(`${label} ${shape.name}: write p50 ${ms(percentile(write, 50))} ms, read p50 ${ms(percentile(read, 50))} ms`);
    out.push({ store: label, shape, write, read, bytes });
  }
  return out;
}

async function benchHistory(label: string, store: DefenderStore): Promise<HistoryResult> {
  const chamber = { toolId: 'bench', chamberId: 'history' };
  await store.chamberState.claim(chamber, 1, 'bench', new Date());
  const commit: number[] = [];
  for (let seq = 1; seq <= HISTORY_RUNS; seq++) {
    const t0 = performance.now();
    await store.chamberState.commitRun({
      chamber,
      epoch: 1,
      ownerId: 'bench',
      sequence: seq,
      runId: `run-${seq}`,
      committedAt: new Date(),
      points: historyPoints(seq),
    });
    commit.push(performance.now() - t0);
  }
  const read: number[] = [];
  let last: RunPointSet[] = [];
  for (let i = 0; i < HISTORY_READS; i++) {
    const t0 = performance.now();
    last = await store.uchart.history(chamber, { limit: HISTORY_RUNS });
    read.push(performance.now() - t0);
  }
  if (last.length !== HISTORY_RUNS || last[0]?.points.length !== HISTORY_INDICATORS) throw new Error('short history');
  const cache = new UChartHistoryCache({ source: store.uchart, sizeMb: 100 });
  await cache.history(chamber, { limit: HISTORY_RUNS });
  const cacheHit: number[] = [];
  for (let i = 0; i < HISTORY_READS; i++) {
    const t0 = performance.now();
    await cache.history(chamber, { limit: HISTORY_RUNS, highWaterMark: HISTORY_RUNS });
    cacheHit.push(performance.now() - t0);
  }
  cache.close();
  log(`${label} history: commit p50 ${ms(percentile(commit, 50))} ms, read p50 ${ms(percentile(read, 50))} ms, cache hit p50 ${ms(percentile(cacheHit, 50))} ms`);
  return { store: label, commit, read, cacheHit };
}

async function main(): Promise<void> {
  const keyspace = `bench_store_${process.pid}`;
  const dir = mkdtempSync(join(tmpdir(), 'defender-bench-store-'));
  let cassandra: CassandraHandle | undefined;
  const traces: TraceResult[] = [];
  const histories: HistoryResult[] = [];
  let cassandraVersion = '';
  try {
    cassandra = await startCassandra({ heapMb: 1024, log });
    cassandraVersion = `${cassandra.version}${cassandra.external ? ' (CASSANDRA_HOSTS)' : ' (local single node, harness)'}`;
    const cstore = await CassandraStore.connect({
      contactPoints: cassandra.contactPoints,
      localDataCenter: cassandra.localDataCenter,
      keyspace,
      requestTimeoutMs: 60_000,
    });
    try {
      traces.push(...(await benchTraces('Cassandra', cstore)));
      histories.push(await benchHistory('Cassandra', cstore));
    } finally {
      await cstore.close();
      const admin = new Client({ contactPoints: cassandra.contactPoints, localDataCenter: cassandra.localDataCenter, socketOptions: { readTimeout: 60_000 } });
      await admin.connect();
      await admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
      await admin.shutdown();
    }
    const sstore = await SqliteStore.open({ filename: join(dir, 'bench.db') });
    try {
      traces.push(...(await benchTraces('SQLite (file, WAL)', sstore)));
      histories.push(await benchHistory('SQLite (file, WAL)', sstore));
    } finally {
      await sstore.close();
    }
  } finally {
    await cassandra?.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const big = traces.find((t) => t.store === 'Cassandra' && t.shape.svids === 200);
  const bigRead = big ? percentile(big.read, 50) : NaN;
  const traceTable = table(
    ['store', 'trace', 'MB (f64)', 'runs', 'write p50 ms', 'write max ms', 'read p50 ms', 'read max ms', 'read MB/s (p50)'],
    traces.map((t) => [
      t.store,
      t.shape.name,
      (t.bytes / 1e6).toFixed(1),
      t.shape.iterations,
      ms(percentile(t.write, 50)),
      ms(Math.max(...t.write)),
      ms(percentile(t.read, 50)),
      ms(Math.max(...t.read)),
      (t.bytes / 1e6 / (percentile(t.read, 50) / 1000)).toFixed(0),
    ]),
  );
  const historyTable = table(
    ['store', `commitRun (${HISTORY_INDICATORS} points) p50 ms`, 'p99 ms', `history read (${HISTORY_RUNS} runs x ${HISTORY_INDICATORS}) p50 ms`, 'p95 ms', 'cache hit p50 ms', 'cache hit p95 ms'],
    histories.map((h) => [
      h.store,
      ms(percentile(h.commit, 50)),
      ms(percentile(h.commit, 99)),
      ms(percentile(h.read, 50)),
      ms(percentile(h.read, 95)),
      ms(percentile(h.cacheHit, 50)),
      ms(percentile(h.cacheHit, 95)),
    ]),
  );
  const verdict = `**3.6 M-point trace read from Cassandra: p50 ${ms(bigRead)} ms** (target well under ${READ_TARGET_MS} ms: ${bigRead < READ_TARGET_MS ? 'met' : 'MISSED'}).`;
  const body = [
    `Cassandra ${cassandraVersion}, keyspace with replication factor 1, consistency QUORUM; SQLite ${'file in WAL mode, synchronous=NORMAL'}.`,
    'Traces are float64, stored as checksummed chunks per SVID (at most 1 MiB in Cassandra, 64 KiB in SQLite: ADR 0010, addendum 2); a read verifies every chunk (length, CRC-32, write id) and copies it into one typed array per SVID.',
    'Each trace row: one warm-up write/read, then `runs` writes of distinct runs and `runs` reads of them.',
    '',
    verdict,
    '',
    '### Traces',
    '',
    traceTable,
    '',
    `### U-chart history (${HISTORY_RUNS} committed runs x ${HISTORY_INDICATORS} indicators)`,
    '',
    '`commitRun` is the fenced commit (points + high-water mark + epoch; a lightweight transaction in Cassandra, `BEGIN IMMEDIATE` in SQLite). ' +
      `A history read returns the last ${HISTORY_RUNS} runs with all points decoded; a cache hit is the defender's in-memory SQLite history cache.`,
    '',
    historyTable,
  ].join('\n');
  writeBenchmarkSection('store', 'Store: traces and U-chart history', 'npm run bench:store', body);
  log(verdict);
  process.stdout.write(`${traceTable}\n\n${historyTable}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
