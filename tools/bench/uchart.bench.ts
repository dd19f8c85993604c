// U-chart statistics throughput (design.md section 5: <= 20 ms for all base statistics on a 3.6 M-point
// trace, O(1) extra memory). Writes the `uchart` section of docs/benchmarks.md.
// Run: npm run bench:uchart   (node --expose-gc, so heap figures are measured after a full GC)
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import {
  computeBaseStatistics,
  computePercentiles,
  createBaseStatistics,
  createTrace,
  IndicatorCalculator,
  resolveWindow,
  SelectionScratch,
  type IndicatorSpec,
  type SampleRange,
  type Trace,
} from '@defender/uchart';
import { percentile, table, writeBenchmarkSection } from './report';
import { handleBenchCommandLine } from './cli';

handleBenchCommandLine(`Usage: npm run bench:uchart

U-chart statistics throughput and memory on traces up to 3.6 M points (run with node --expose-gc, as
npm run does). Writes the \`uchart\` section of docs/benchmarks.md. No options or parameters.

Options:
  -h, --help          this text
`);

const TARGET_MS = 20;

interface Shape {
  name: string;
  svids: number;
  hz: number;
  seconds: number;
  iterations: number;
}

// The seeds' chamber classes: weight = SVIDs x Hz x seconds.
const SHAPES: Shape[] = [
  { name: '30 K (50 SVIDs x 1 Hz x 600 s)', svids: 50, hz: 1, seconds: 600, iterations: 3000 },
  { name: '120 K (100 SVIDs x 1 Hz x 1,200 s)', svids: 100, hz: 1, seconds: 1200, iterations: 1000 },
  { name: '3.6 M (200 SVIDs x 10 Hz x 1,800 s)', svids: 200, hz: 10, seconds: 1800, iterations: 200 },
];

/** Deterministic sensor-like data: offset + drift + noise (xorshift32), optional missing samples. */
function makeTrace(shape: Shape, missingEvery: number): Trace {
  const n = shape.hz * shape.seconds;
  let s = 0x9e3779b9;
  const rnd = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  const svids: Record<string, Float64Array> = {};
  for (let j = 0; j < shape.svids; j++) {
    const a = new Float64Array(n);
    const offset = 100 * (j + 1);
    for (let i = 0; i < n; i++)
      a[i] = missingEvery > 0 && i % missingEvery === 7 ? NaN : offset + 1e-3 * i + (rnd() - 0.5);
    svids[`svid-${j}`] = a;
  }
  const q = Math.floor(n / 4);
  return createTrace({
    runId: `bench-${shape.svids}-${n}`,
    timing: { kind: 'regular', startSeconds: 0, frequencyHz: shape.hz },
    svids,
    steps: [
      { name: 'stabilize', startIndex: 0 },
      { name: 'main', startIndex: q },
      { name: 'overetch', startIndex: 2 * q },
      { name: 'purge', startIndex: 3 * q },
    ],
  });
}

interface Measured {
  samples: number[];
  heapPerIterBytes: number;
  heapRetainedBytes: number;
  bufferPerIterBytes: number;
}

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error('run with node --expose-gc (npm run bench:uchart)');
  g();
}

/** Times `fn` per iteration; heap growth is measured over the timed loop without a GC in between. */
function measure(iterations: number, fn: () => void): Measured {
  for (let i = 0; i < Math.min(20, iterations); i++) fn(); // warm up (JIT)
  gc();
  const m0 = process.memoryUsage();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    fn();
    samples.push(performance.now() - t0);
  }
  const m1 = process.memoryUsage();
  gc();
  const m2 = process.memoryUsage();
  return {
    samples,
    // The samples array itself grows by one number per iteration (8 bytes amortised): not the kernel's.
    heapPerIterBytes: (m1.heapUsed - m0.heapUsed) / iterations,
    heapRetainedBytes: m2.heapUsed - m0.heapUsed,
    bufferPerIterBytes: (m1.arrayBuffers - m0.arrayBuffers) / iterations,
  };
}

const fmt = (ms: number) => ms.toFixed(ms < 1 ? 3 : 2);
const kb = (b: number) => `${(b / 1024).toFixed(1)} KiB`;

function main(): void {
  const load = loadavg().map((l) => l.toFixed(2));
  const rows: (string | number)[][] = [];
  const checks: string[] = [];
  let failed = false;
  for (const shape of SHAPES) {
    for (const missingEvery of [0, 1000]) {
      const trace = makeTrace(shape, missingEvery);
      const points = trace.length * trace.svids.size;
      const arrays = [...trace.svids.values()];
      const whole: SampleRange = { start: 0, end: trace.length };
      const windows = [
        whole,
        ...trace.steps.map((st) => resolveWindow(trace, { kind: 'step', step: st.name })),
      ];
      const out = createBaseStatistics();
      const scratch = new SelectionScratch();
      const label = `${shape.name}${missingEvery ? ', 0.1 % NaN' : ''}`;

      // 1. Every base statistic, whole context, every SVID: the design target.
      const base = measure(shape.iterations, () => {
        for (const a of arrays) computeBaseStatistics(a, trace.timing, whole, out);
      });
      // 2. Context + the four steps (5 windows per SVID).
      const stepped = measure(Math.ceil(shape.iterations / 5), () => {
        for (const a of arrays) for (const w of windows) computeBaseStatistics(a, trace.timing, w, out);
      });
      // 3. Exact median / p05 / p95 by selection, whole context.
      const pct = measure(Math.ceil(shape.iterations / 10), () => {
        for (const a of arrays) computePercentiles(a, whole, scratch);
      });
      // 4. The indicator API a defender uses: mean, std, max, slope per SVID (+ per-step mean).
      const specs: IndicatorSpec[] = [];
      for (const svid of trace.svids.keys()) {
        for (const statistic of ['mean', 'std', 'max', 'slope'] as const)
          specs.push({ svid, window: { kind: 'context' }, statistic });
        specs.push({ svid, window: { kind: 'step', step: 'main', trimStartSeconds: 5 }, statistic: 'mean' });
      }
      const calc = new IndicatorCalculator(scratch);
      const api = measure(Math.ceil(shape.iterations / 2), () => {
        calc.compute(trace, specs);
      });

      const cases: [string, Measured, number][] = [
        ['base statistics, context', base, points],
        ['base statistics, context + 4 steps', stepped, points * 2],
        ['median / p05 / p95 (selection)', pct, points],
        [`IndicatorCalculator (${specs.length} indicators)`, api, points * 1.25],
      ];
      for (const [what, m, touched] of cases) {
        const p50 = percentile(m.samples, 50);
        const p99 = percentile(m.samples, 99);
        rows.push([
          label,
          what,
          m.samples.length,
          fmt(p50),
          fmt(p99),
          ((touched / p50) * 1e-3).toFixed(0),
          kb(m.heapPerIterBytes),
          kb(m.bufferPerIterBytes),
          kb(m.heapRetainedBytes),
        ]);
      }
      if (shape.svids * shape.hz * shape.seconds === 3_600_000) {
        // Judged on the median: on this shared 2-core machine a p99 of a few hundred iterations mostly
        // measures preemption by other processes (the load average is reported with the table).
        const p50 = percentile(base.samples, 50);
        const p99 = percentile(base.samples, 99);
        const ok = p50 <= TARGET_MS;
        failed ||= !ok;
        checks.push(
          `- ${label}: all base statistics p50 ${fmt(p50)} ms, p99 ${fmt(p99)} ms (target <= ${TARGET_MS} ms): ${ok ? 'PASS' : 'FAIL'}`,
        );
      }
    }
  }

  const body = [
    'All base statistics (n, n_missing, mean, std, min, max, range, first, last, slope, integral, duration)',
    "per SVID in one pass over the caller's typed array (no copy); percentiles by Floyd-Rivest selection on",
    'a reused scratch buffer. Time per whole trace (all SVIDs). Heap and ArrayBuffer growth are measured',
    "across the timed loop with no GC in between, divided by iterations (so they include the timing loop's",
    'own bookkeeping, ~8 B/iteration); "retained" is after a full GC.',
    `Load average when the run started (1 / 5 / 15 min): ${load.join(' / ')} on ${cpus().length} cores.` +
      (Number(load[0]) > cpus().length / 2
        ? ' **The machine was busy**: the 3.6 M case streams 29 MB per pass and is memory-bandwidth bound, so' +
          ' other processes slow it; rerun on an idle machine for target numbers.'
        : ''),
    '',
    table(
      [
        'trace',
        'work',
        'iterations',
        'p50 ms',
        'p99 ms',
        'M samples/s (p50)',
        'heap/iter',
        'ArrayBuffer/iter',
        'heap retained',
      ],
      rows,
    ),
    '',
    'Target (design.md section 5): <= 20 ms for all base statistics on a 3.6 M-point trace.',
    ...checks,
  ].join('\n');
  writeBenchmarkSection('uchart', 'U-chart statistics (libs/uchart)', 'npm run bench:uchart', body);
  process.stdout.write(`${body}\n`);
  if (failed) process.exitCode = 1;
}

main();
