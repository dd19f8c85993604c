// Observation helpers for the pipeline benchmark: Prometheus text histograms and counters from a
// defender's /metrics, and memory / CPU of a process from /proc.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** A cumulative Prometheus histogram (all label sets of one metric summed, `le` kept). */
export interface Histo {
  /** Upper bounds ascending, the last one +Inf, with cumulative counts. */
  readonly buckets: { le: number; count: number }[];
  readonly sum: number;
  readonly count: number;
}

function labelValue(labels: string, name: string): string | undefined {
  return new RegExp(`(?:^|,)${name}="([^"]*)"`).exec(labels)?.[1];
}

/** Parses histogram `name` from Prometheus text exposition (summing label sets per bucket). */
export function parseHistogram(text: string, name: string): Histo {
  const byLe = new Map<number, number>();
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^(\S+?)(?:\{([^}]*)\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const [, metric, labels = '', value] = m;
    const v = Number(value);
    if (metric === `${name}_bucket`) {
      const le = labelValue(labels, 'le');
      if (le === undefined) continue;
      const k = le === '+Inf' ? Infinity : Number(le);
      byLe.set(k, (byLe.get(k) ?? 0) + v);
    } else if (metric === `${name}_sum`) sum += v;
    else if (metric === `${name}_count`) count += v;
  }
  const buckets = [...byLe.entries()].sort((a, b) => a[0] - b[0]).map(([le, c]) => ({ le, count: c }));
  return { buckets, sum, count };
}

/** `after - before` (observations made in between). */
export function diffHistogram(after: Histo, before: Histo): Histo {
  const prev = new Map(before.buckets.map((b) => [b.le, b.count]));
  return {
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (prev.get(b.le) ?? 0) })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/** Quantile `q` (0..1) by linear interpolation inside the bucket, as PromQL's histogram_quantile. */
export function histogramQuantile(h: Histo, q: number): number {
  if (h.count <= 0 || h.buckets.length === 0) return NaN;
  const rank = q * h.count;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of h.buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return prevLe; // beyond the last finite bound: report that bound
      const inBucket = b.count - prevCount;
      return inBucket <= 0 ? b.le : prevLe + (b.le - prevLe) * ((rank - prevCount) / inBucket);
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}

/** Sum and count of histogram `name` per value of `label` (e.g. per store operation). */
export function histogramTotalsBy(text: string, name: string, label: string): Map<string, { sum: number; count: number }> {
  const out = new Map<string, { sum: number; count: number }>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^(\S+?)(?:\{([^}]*)\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const [, metric, labels = '', value] = m;
    const key = labelValue(labels, label);
    if (key === undefined || (metric !== `${name}_sum` && metric !== `${name}_count`)) continue;
    const t = out.get(key) ?? { sum: 0, count: 0 };
    if (metric === `${name}_sum`) t.sum += Number(value);
    else t.count += Number(value);
    out.set(key, t);
  }
  return out;
}

/** `after - before` per key of {@link histogramTotalsBy}; keys without new observations are left out. */
export function diffTotals(
  after: Map<string, { sum: number; count: number }>,
  before: Map<string, { sum: number; count: number }>,
): Map<string, { sum: number; count: number }> {
  const out = new Map<string, { sum: number; count: number }>();
  for (const [k, a] of after) {
    const b = before.get(k) ?? { sum: 0, count: 0 };
    if (a.count - b.count > 0) out.set(k, { sum: a.sum - b.sum, count: a.count - b.count });
  }
  return out;
}

/** Sums counter `name` over its label sets, optionally only those whose labels contain `filter`. */
export function parseCounter(text: string, name: string, filter?: string): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^(\S+?)(?:\{([^}]*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (filter && !(m[2] ?? '').includes(filter)) continue;
    total += Number(m[3]);
  }
  return total;
}

/** VmRSS and VmHWM (peak RSS since the process started) in MiB; undefined when the process is gone. */
export function memoryOf(pid: number): { rssMb: number; hwmMb: number } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Resident memory of a process by kind of mapping, MiB (from /proc/<pid>/smaps). */
export interface MemoryBreakdown {
  readonly rssMb: number;
  /** The node executable's mapped pages (code and read-only data). */
  readonly nodeBinaryMb: number;
  /** Other file-backed mappings (shared libraries, native addons, mapped files). */
  readonly otherFilesMb: number;
  /** glibc's main malloc arena (`[heap]`, grown with brk). */
  readonly brkHeapMb: number;
  /** Anonymous mappings: the V8 heap, other malloc arenas, large mmapped allocations, thread stacks. */
  readonly anonMb: number;
}

/** Sums Rss of `/proc/<pid>/smaps` by kind of mapping; undefined when the process is gone. */
export function memoryBreakdownOf(pid: number): MemoryBreakdown | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return undefined;
  }
  return parseSmaps(text);
}

/** {@link memoryBreakdownOf} of smaps text. */
export function parseSmaps(text: string): MemoryBreakdown {
  const kb = { node: 0, files: 0, brk: 0, anon: 0 };
  let kind: keyof typeof kb = 'anon';
  for (const line of text.split('\n')) {
    // A mapping's header: "start-end perms offset dev inode [path]".
    const h = /^[0-9a-f]+-[0-9a-f]+ \S{4} [0-9a-f]+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (h) {
      const path = (h[2] ?? '').trim();
      if (path === '[heap]') kind = 'brk';
      else if (h[1] !== '0' && /(^|\/)node$/.test(path)) kind = 'node';
      else if (h[1] !== '0') kind = 'files';
      else kind = 'anon';
      continue;
    }
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r) kb[kind] += Number(r[1]);
  }
  const mb = (k: number) => k / 1024;
  return {
    rssMb: mb(kb.node + kb.files + kb.brk + kb.anon),
    nodeBinaryMb: mb(kb.node),
    otherFilesMb: mb(kb.files),
    brkHeapMb: mb(kb.brk),
    anonMb: mb(kb.anon),
  };
}

/**
 * Sums gauge or counter `name` per value of `label` (e.g. `nodejs_heap_space_size_total_bytes` by
 * `space`), from Prometheus text exposition.
 */
export function gaugesBy(text: string, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^(\S+?)(?:\{([^}]*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const key = labelValue(m[2] ?? '', label) ?? '';
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

let clockTicks: number | undefined;

/** User + system CPU time of a process so far, in ms. */
export function cpuMsOf(pid: number): number {
  return cpuMsOfStat(`/proc/${pid}/stat`);
}

/**
 * User + system CPU time, ms, of the threads of process `pid` whose name (`comm`: a Worker's `name`,
 * `MainThread` for Node's main thread; at most 15 characters) is `thread`; NaN when none is found.
 */
export function threadCpuMsOf(pid: number, thread: string): number {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return NaN;
  }
  let total = NaN;
  for (const tid of tasks) {
    let comm: string;
    try {
      comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // the thread ended meanwhile
    }
    if (comm !== thread.slice(0, 15)) continue;
    const ms = cpuMsOfStat(`/proc/${pid}/task/${tid}/stat`);
    if (Number.isFinite(ms)) total = (Number.isNaN(total) ? 0 : total) + ms;
  }
  return total;
}

function cpuMsOfStat(path: string): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  try {
    const stat = readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command: state(0) ppid(1) ... utime(11) stime(12).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
  } catch {
    return NaN;
  }
}

/** 1-minute load average. */
export function loadAverage(): number {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  } catch {
    return NaN;
  }
}

/**
 * Extra process environment from a `K=V,K=V` list (e.g. `BENCH_DEFENDER_ENV`: allocator or V8
 * settings to try). Values may contain `=`; entries without one are rejected.
 */
export function envList(name: string, raw = process.env[name] ?? ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of raw.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new Error(`${name}: expected K=V entries separated by commas, got "${kv}"`);
    out[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return out;
}

/** NODE_OPTIONS that let {@link takeHeapSnapshot} ask a process for a heap snapshot written into `dir`. */
export function heapSnapshotNodeOptions(dir: string): string {
  return `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`;
}

/**
 * A V8 heap snapshot of process `pid` (started with {@link heapSnapshotNodeOptions}`(dir)`), moved to
 * `file` (open it in Chrome DevTools > Memory, or summarize it with tools/bench/heap-summary.ts).
 * Node writes it on the process's main thread when it gets SIGUSR2; the process answers `liveUrl`
 * again once the file is complete. Returns its size in bytes. (Defenders serve no snapshot over HTTP:
 * it would hold every credential they know.)
 */
export async function takeHeapSnapshot(pid: number, dir: string, liveUrl: string, file: string): Promise<number> {
  const { readdirSync, renameSync, statSync } = await import('node:fs');
  const { join } = await import('node:path');
  const snapshots = () => new Set(readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot')));
  const before = snapshots();
  process.kill(pid, 'SIGUSR2');
  let written: string | undefined;
  let size = -1;
  for (let i = 0; i < 1_200; i++) {
    await new Promise((r) => setTimeout(r, 250));
    written ??= [...snapshots()].find((f) => !before.has(f));
    if (written === undefined) continue;
    const now = statSync(join(dir, written)).size;
    const live = await fetch(liveUrl).then((r) => r.ok, () => false);
    if (live && now === size && now > 0) {
      renameSync(join(dir, written), file);
      return now;
    }
    size = now;
  }
  throw new Error(`no complete heap snapshot from pid ${pid} in ${dir} after 300 s`);
}
