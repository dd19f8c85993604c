// bench:malloc — how much resident memory one malloc_trim (libs/malloc) gives back after blocks freed
// between live ones, the measurement libs/malloc's test made until issue 47 (it bounded the RSS drop
// and how soon V8 freed the blocks, which a busy machine broke). Each round runs in a child process of
// its own, so every round starts from a fresh heap. Two ways of freeing the blocks: detached
// (`transfer(0)`, as the store frees trace buffers: freed at once) and dropped then collected (a full
// GC; V8 frees the memory on a background thread, so the round waits until the C heap's free bytes
// stop growing). Writes the `malloc` section of docs/benchmarks.md.
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { loadMalloc, sourceBuildPath } from '@defender/malloc';
import { envInt, handleBenchCommandLine } from './cli';
import { percentile, table, writeBenchmarkSection } from './report';

handleBenchCommandLine(`Usage: npm run bench:malloc

Allocates blocks interleaved with small blocks that stay (the defender's trace buffers between live
allocations), frees the blocks, and measures the process's RSS before and after one malloc_trim(0)
through libs/malloc's addon. One child process per round. Writes the malloc section of
docs/benchmarks.md.

Environment:
  MALLOC_BENCH_ROUNDS=<n>       rounds per way of freeing (7)
  MALLOC_BENCH_BLOCKS=<n>       blocks freed per round (3000)
  MALLOC_BENCH_BLOCK_BYTES=<n>  bytes per block, below glibc's mmap threshold (20000)
  MALLOC_BENCH_WRITE=0          do not write docs/benchmarks.md
  BENCH_QUICK=1                 2 rounds, no docs

Options:
  -h, --help          this text
`);

type Way = 'detached' | 'collected';

interface Round {
  /** Bytes handed to the blocks freed. */
  readonly freedBytes: number;
  /** The C heap's free bytes just before the trim. */
  readonly freeBytesBefore: number;
  /** Milliseconds from the free (the detach, or the GC's start) until the free bytes stopped growing. */
  readonly freeMs: number;
  readonly rssAllocatedMb: number;
  readonly rssBeforeTrimMb: number;
  readonly rssAfterTrimMb: number;
  readonly trimMs: number;
  readonly released: boolean;
}

const MB = 2 ** 20;
const rssMb = () => process.memoryUsage().rss / MB;

interface TransferableArrayBuffer extends ArrayBuffer {
  transfer(newByteLength?: number): ArrayBuffer;
}

/** One round in this process. */
async function round(way: Way, blocksN: number, blockBytes: number): Promise<Round> {
  const m = loadMalloc([sourceBuildPath()]);
  if (!m.supported) throw new Error('malloc_trim is not supported by this C library');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  let blocks: Buffer[] = [];
  const pins: Buffer[] = [];
  for (let i = 0; i < blocksN; i++) {
    blocks.push(Buffer.alloc(blockBytes, 1));
    // 256 bytes: a C-heap block (V8 keeps typed arrays of 64 bytes or less on its own heap).
    pins.push(Buffer.alloc(256, 2));
  }
  const rssAllocatedMb = rssMb();
  const t0 = performance.now();
  if (way === 'detached') {
    for (const b of blocks) (b.buffer as TransferableArrayBuffer).transfer(0);
    blocks = [];
  } else {
    blocks = [];
    gc();
  }
  // Wait until V8's background thread has freed what it will: the free bytes stop growing for 200 ms
  // (at most 30 s; a detached round is already there).
  let last = m.info()!.freeBytes;
  let lastGrowth = performance.now();
  while (performance.now() - lastGrowth < 200 && performance.now() - t0 < 30_000) {
    await new Promise((r) => setTimeout(r, 10));
    const now = m.info()!.freeBytes;
    if (now > last) {
      last = now;
      lastGrowth = performance.now();
    }
  }
  const freeMs = way === 'detached' ? 0 : lastGrowth - t0;
  const before = m.info()!;
  const rssBeforeTrimMb = rssMb();
  const t1 = performance.now();
  const released = m.trim();
  const trimMs = performance.now() - t1;
  const rssAfterTrimMb = rssMb();
  if (!pins.every((p) => p[0] === 2 && p[255] === 2)) throw new Error('a live block changed across the trim');
  return { freedBytes: blocksN * blockBytes, freeBytesBefore: before.freeBytes, freeMs, rssAllocatedMb, rssBeforeTrimMb, rssAfterTrimMb, trimMs, released };
}

const CHILD = process.env['MALLOC_BENCH_ROUND'];

function range(xs: number[], digits = 1): string {
  return `${percentile(xs, 50).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)})`;
}

async function main(): Promise<void> {
  if (CHILD) {
    const { way, blocks, blockBytes } = JSON.parse(CHILD) as { way: Way; blocks: number; blockBytes: number };
    process.stdout.write(`${JSON.stringify(await round(way, blocks, blockBytes))}\n`);
    return;
  }
  const quick = process.env['BENCH_QUICK'] === '1';
  const rounds = quick ? 2 : envInt('MALLOC_BENCH_ROUNDS', 7, 1);
  const blocks = envInt('MALLOC_BENCH_BLOCKS', 3000, 1);
  const blockBytes = envInt('MALLOC_BENCH_BLOCK_BYTES', 20_000, 1024);
  const write = !quick && process.env['MALLOC_BENCH_WRITE'] !== '0';
  const started = performance.now();
  const load = loadavg()[0]!;
  const rows: string[][] = [];
  const ways: { way: Way; label: string }[] = [
    { way: 'detached', label: 'detached (`transfer(0)`): freed at once' },
    { way: 'collected', label: "dropped, full GC: freed by V8's background thread" },
  ];
  for (const { way, label } of ways) {
    const rs: Round[] = [];
    for (let i = 0; i < rounds; i++) {
      const out = execFileSync(process.execPath, [...process.execArgv, __filename], {
        env: { ...process.env, MALLOC_BENCH_ROUND: JSON.stringify({ way, blocks, blockBytes }) },
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      });
      const r = JSON.parse(out.trim().split('\n').pop() ?? '{}') as Round;
      process.stdout.write(`${way} ${i + 1}/${rounds}: ${JSON.stringify(r)}\n`);
      rs.push(r);
    }
    rows.push([
      label,
      String(rounds),
      (rs[0]!.freedBytes / MB).toFixed(1),
      range(rs.map((r) => r.freeBytesBefore / MB)),
      way === 'detached' ? '0' : range(rs.map((r) => r.freeMs), 0),
      range(rs.map((r) => r.rssAllocatedMb)),
      range(rs.map((r) => r.rssBeforeTrimMb)),
      range(rs.map((r) => r.rssAfterTrimMb)),
      range(rs.map((r) => r.rssBeforeTrimMb - r.rssAfterTrimMb)),
      range(rs.map((r) => r.trimMs), 2),
      `${rs.filter((r) => r.released).length} / ${rounds}`,
    ]);
  }
  const header = ['blocks freed', 'rounds', 'freed MB', 'C heap free MB before the trim', 'ms until freed', 'RSS MB allocated', 'RSS MB before the trim', 'RSS MB after', 'RSS drop MB', 'trim ms', 'trim released'];
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(`${table(header, rows)}\n`);
  if (write) {
    writeBenchmarkSection(
      'malloc',
      'malloc_trim: resident memory returned after blocks freed between live ones (libs/malloc)',
      'npm run bench:malloc',
      [
        `Each round in a process of its own: ${blocks.toLocaleString('en-US')} blocks of ${blockBytes.toLocaleString('en-US')} bytes (C heap: below glibc's mmap threshold) allocated interleaved with 256-byte blocks that stay, the blocks freed, then one \`malloc_trim(0)\` through the addon. Before the trim the round waits until the C heap's free bytes (mallinfo2) have not grown for 200 ms. Figures are the median (min-max) of the rounds; RSS from \`process.memoryUsage()\`. Load average ${load.toFixed(1)} when the run started. ${seconds.toFixed(0)} s in total.`,
        '',
        table(header, rows),
        '',
        "glibc keeps free blocks between live ones resident (the RSS before the trim stays at the allocated level); the trim returns their whole pages. A collected block is freed when V8's background thread gets to it, which a loaded machine delays (libs/malloc's test used to wait 2 s for it and bound the RSS drop; issue 47 moved that measurement here).",
      ].join('\n'),
    );
    process.stdout.write('wrote the malloc section of docs/benchmarks.md\n');
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
