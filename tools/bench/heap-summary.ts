// Summarizes a V8 heap snapshot (taken by signal: bench:fab's FAB_HEAP_SNAPSHOTS): self size and count per node type and per constructor or
// string kind, largest first. Answers "what fills the heap" without Chrome DevTools.
//
// Run: node -r ./tools/scripts/register.js tools/bench/heap-summary.ts <file.heapsnapshot> [top=30]   (--help)
//
// The file is scanned as bytes (a snapshot of a few hundred MB of heap exceeds V8's string limit, so
// it cannot go through JSON.parse whole): the small header is parsed as JSON, the `nodes` array as
// numbers, `edges` is skipped, and `strings` is parsed element by element.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Header {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] };
    node_count: number;
    edge_count: number;
  };
}

/** Byte offset just after `"<name>":[` at or after `from`. */
function arrayStart(buf: Buffer, name: string, from: number): number {
  const at = buf.indexOf(`"${name}":[`, from, 'latin1');
  if (at < 0) throw new Error(`not a heap snapshot: no "${name}" array`);
  return at + name.length + 4;
}

/** Parses the non-negative integers of the array starting at `start`, up to its closing bracket. */
function parseInts(buf: Buffer, start: number, expected: number, what = 'nodes'): { values: Float64Array; end: number } {
  const values = new Float64Array(expected);
  let n = 0;
  let cur = -1;
  let i = start;
  for (; i < buf.length; i++) {
    const c = buf[i] as number;
    if (c >= 48 && c <= 57) cur = (cur < 0 ? 0 : cur * 10) + (c - 48);
    else {
      if (cur >= 0) {
        if (n >= expected) throw new Error(`the ${what} array holds more than the ${expected} values the header announces`);
        values[n++] = cur;
        cur = -1;
      }
      if (c === 93) break; // ]
    }
  }
  if (n !== expected) throw new Error(`the ${what} array holds ${n} values, the header announces ${expected}`);
  return { values, end: i };
}

/** Parses the JSON strings of the array starting at `start`. */
function parseStrings(buf: Buffer, start: number): string[] {
  const out: string[] = [];
  let i = start;
  while (i < buf.length) {
    const c = buf[i] as number;
    if (c === 93) break;
    if (c !== 34) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < buf.length && buf[j] !== 34) j += buf[j] === 92 ? 2 : 1;
    out.push(JSON.parse(buf.toString('utf8', i, j + 1)) as string);
    i = j + 1;
  }
  return out;
}

/** The group of `key` in `groups`, created empty if new. */
function groupOf(groups: Map<string, HeapGroup>, key: string, type: string, name: string): HeapGroup {
  let g = groups.get(key);
  if (!g) {
    g = { type, name, count: 0, bytes: 0 };
    groups.set(key, g);
  }
  return g;
}

export interface HeapGroup {
  readonly type: string;
  readonly name: string;
  count: number;
  bytes: number;
}

export function summarize(buf: Buffer): { total: number; nodes: number; byType: HeapGroup[]; byName: HeapGroup[]; byOwner: HeapGroup[] } {
  const nodesAt = arrayStart(buf, 'nodes', 0);
  const header = JSON.parse(`${buf.toString('utf8', 0, nodesAt - '"nodes":['.length).replace(/,\s*$/, '')}}`) as Header;
  const fields = header.snapshot.meta.node_fields;
  const types = header.snapshot.meta.node_types[0];
  const stride = fields.length;
  const [typeF, nameF, sizeF] = ['type', 'name', 'self_size'].map((f) => {
    const k = fields.indexOf(f);
    if (k < 0) throw new Error(`heap snapshot node fields lack "${f}"`);
    return k;
  }) as [number, number, number];
  const { values, end } = parseInts(buf, nodesAt, header.snapshot.node_count * stride);
  const edgeFields = header.snapshot.meta.edge_fields;
  const edgeStride = edgeFields.length;
  const edgeTypes = header.snapshot.meta.edge_types[0];
  const edges = parseInts(buf, arrayStart(buf, 'edges', end), header.snapshot.edge_count * edgeStride, 'edges');
  const strings = parseStrings(buf, arrayStart(buf, 'strings', edges.end));
  // The first strong retainer of each node ("owner"): which object and field holds the bytes.
  const countF = fields.indexOf('edge_count');
  const [eTypeF, eNameF, eToF] = ['type', 'name_or_index', 'to_node'].map((f) => edgeFields.indexOf(f)) as [number, number, number];
  const nodeCount = values.length / stride;
  const owner = new Int32Array(nodeCount).fill(-1);
  const ownerEdge = new Array<string>(nodeCount);
  const label = (n: number) => {
    const t = types[values[n * stride + typeF] as number] ?? '?';
    const nm = strings[values[n * stride + nameF] as number] ?? '?';
    return t === 'object' || t === 'closure' || t === 'native' || t === 'hidden' ? `${nm.slice(0, 60)}` : `(${t})`;
  };
  for (let n = 0, e = 0; n < nodeCount; n++) {
    const count = values[n * stride + countF] as number;
    for (let k = 0; k < count; k++, e += edgeStride) {
      const et = edgeTypes[edges.values[e + eTypeF] as number];
      if (et === 'weak' || et === 'shortcut') continue;
      const to = (edges.values[e + eToF] as number) / stride;
      if (owner[to] !== -1) continue;
      owner[to] = n;
      const nameOrIndex = edges.values[e + eNameF] as number;
      ownerEdge[to] = et === 'element' || et === 'hidden' ? `[${et}]` : (strings[nameOrIndex] ?? '?').slice(0, 40);
    }
  }
  const byOwner = new Map<string, HeapGroup>();
  for (let n = 0; n < nodeCount; n++) {
    const o = owner[n] as number;
    const type = types[values[n * stride + typeF] as number] ?? '?';
    // Two levels: a Map's table says little until one knows whose Map it is.
    const oo = o < 0 ? -1 : (owner[o] as number);
    const via = o < 0 ? '(root)' : `${label(o)}.${ownerEdge[n]}${oo < 0 ? '' : ` <- ${label(oo)}.${ownerEdge[o]}`}`;
    const name = `${label(n)} <- ${via}`;
    const k = `${type}\u0000${name}`;
    const g = groupOf(byOwner, k, type, name);
    g.count++;
    g.bytes += values[n * stride + sizeF] as number;
  }
  const byType = new Map<string, HeapGroup>();
  const byName = new Map<string, HeapGroup>();
  let total = 0;
  for (let o = 0; o < values.length; o += stride) {
    const type = types[values[o + typeF] as number] ?? '?';
    const size = values[o + sizeF] as number;
    // Strings and numbers are grouped by type (their "name" is the value); objects by constructor.
    const raw = strings[values[o + nameF] as number] ?? '?';
    const name = type === 'object' || type === 'native' || type === 'closure' || type === 'hidden' || type === 'array' ? raw.slice(0, 80) : `(${type})`;
    total += size;
    const t = groupOf(byType, type, type, type);
    t.count++;
    t.bytes += size;
    const k = `${type}\u0000${name}`;
    const g = groupOf(byName, k, type, name);
    g.count++;
    g.bytes += size;
  }
  const desc = (a: HeapGroup, b: HeapGroup) => b.bytes - a.bytes;
  return {
    total,
    nodes: nodeCount,
    byType: [...byType.values()].sort(desc),
    byName: [...byName.values()].sort(desc),
    byOwner: [...byOwner.values()].sort(desc),
  };
}

const USAGE = `Usage: node -r ./tools/scripts/register.js tools/bench/heap-summary.ts <file.heapsnapshot> [top]

What fills a V8 heap snapshot: self size and count per node type, per constructor or string kind and per
first strong retainer, largest first; the first \`top\` rows of each (default 30).

Options:
  -h, --help          this text
`;

/** The command line: a snapshot file and an optional row count, or 'help'. @throws Error for anything else. */
export function parseCommandLine(argv: readonly string[]): { file: string; top: number } | 'help' {
  const { values, positionals } = parseArgs({ args: [...argv], options: { help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: true });
  if (values.help) return 'help';
  const [file, topArg, ...extra] = positionals;
  if (!file) throw new Error('a heap snapshot file is required');
  if (extra.length > 0) throw new Error(`unexpected argument "${extra[0]}"`);
  const top = Number(topArg ?? 30);
  if (!Number.isInteger(top) || top < 1) throw new Error(`top must be a positive integer, got "${topArg}"`);
  return { file, top };
}

function main(): void {
  let cli;
  try {
    cli = parseCommandLine(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (cli === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const { file, top } = cli;
  const s = summarize(readFileSync(file));
  const mb = (b: number) => (b / 1024 / 1024).toFixed(1).padStart(8);
  console.log(`${file}: ${s.nodes.toLocaleString('en-US')} nodes, ${mb(s.total).trim()} MB self size`);
  console.log('\nby node type:');
  for (const g of s.byType) console.log(`${mb(g.bytes)} MB ${String(g.count).padStart(10)}  ${g.type}`);
  console.log(`\ntop ${top} by constructor / kind:`);
  for (const g of s.byName.slice(0, top)) console.log(`${mb(g.bytes)} MB ${String(g.count).padStart(10)}  ${g.type.padEnd(8)} ${g.name}`);
  console.log(`\ntop ${top} by what holds them (first strong retainer: owner.field):`);
  for (const g of s.byOwner.slice(0, top)) console.log(`${mb(g.bytes)} MB ${String(g.count).padStart(10)}  ${g.type.padEnd(8)} ${g.name}`);
}

if (require.main === module) main();
