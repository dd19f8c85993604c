import fc from 'fast-check';
import { CorruptRecordError, TornTraceError, UnknownSchemaVersionError, type SampleArray, type TraceRecord } from '@defender/contracts';
import { parseTraceManifest, planTraceWrite, releaseTraceMemory, stringifyTraceManifest, TraceAssembler, type TraceChunk } from './trace-codec';
import { bytesOf, rng } from '../../testing/fixtures';

const run = { toolId: 'T1', chamberId: 'C1', runId: 'r1' };

function makeTrace(svids: number, n: number, seed: number, explicit: boolean): TraceRecord {
  const r = rng(seed);
  const map = new Map<string, SampleArray>();
  for (let j = 0; j < svids; j++) {
    const a = j % 2 === 0 ? new Float64Array(n) : new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = i % 5 === 0 ? NaN : r() * 1e6 - 5e5;
    map.set(`s${j}`, a);
  }
  return {
    ...run,
    timing: explicit ? { kind: 'explicit', timesSeconds: Float64Array.from({ length: n }, (_, i) => i / 3) } : { kind: 'regular', startSeconds: -1.5, frequencyHz: 2.5 },
    svids: map,
    steps: n > 2 ? [{ name: 'a', startIndex: 0 }, { name: 'b', startIndex: 2 }] : [],
    recipe: 'R',
  };
}

function roundTrip(t: TraceRecord, chunkBytes: number, order: (c: TraceChunk[]) => TraceChunk[] = (c) => c): TraceRecord {
  const plan = planTraceWrite(t, chunkBytes, 'w1');
  const manifest = parseTraceManifest(stringifyTraceManifest(plan.manifest), {});
  const asm = new TraceAssembler(run, manifest);
  for (const c of order([...plan.chunks()])) asm.add({ ...c, data: Buffer.from(c.data) });
  return asm.finish();
}

describe('trace chunk layout', () => {
  it('round-trips traces bit for bit for any chunk size and chunk order (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 1, max: 64 }).map((k) => k * 8),
        fc.boolean(),
        fc.integer(),
        (svids, n, chunkBytes, explicit, seed) => {
          const t = makeTrace(svids, n, seed, explicit);
          const back = roundTrip(t, chunkBytes, (cs) => [...cs].reverse());
          expect([...back.svids.keys()]).toEqual([...t.svids.keys()]);
          for (const [k, a] of t.svids) {
            const b = back.svids.get(k) as SampleArray;
            expect(b.constructor).toBe(a.constructor);
            expect(bytesOf(b).equals(bytesOf(a))).toBe(true);
          }
          if (t.timing.kind === 'explicit' && back.timing.kind === 'explicit') expect(bytesOf(back.timing.timesSeconds).equals(bytesOf(t.timing.timesSeconds))).toBe(true);
          else expect(back.timing).toEqual(t.timing);
          expect(back.steps).toEqual(t.steps);
        },
      ),
      { seed: 1234, numRuns: 150 },
    );
  });

  it('cuts series into chunks of at most chunkBytes, each with length and CRC', () => {
    const t = makeTrace(1, 1000, 1, false); // 8,000 bytes of f64
    const plan = planTraceWrite(t, 3000, 'w');
    const chunks = [...plan.chunks()];
    expect(chunks.map((c) => c.byteLength)).toEqual([3000, 3000, 2000]);
    expect(plan.manifest.series).toEqual([{ kind: 1, name: 's0', dtype: 'f64', chunks: 3, bytes: 8000 }]);
    expect(() => planTraceWrite(t, 12)).toThrow(RangeError);
    expect(() => planTraceWrite(t, (1 << 20) + 8)).toThrow(RangeError);
  });

  it('names the missing chunk instead of returning zeros', () => {
    const t = makeTrace(2, 100, 3, false);
    const plan = planTraceWrite(t, 64, 'w');
    const asm = new TraceAssembler(run, plan.manifest);
    for (const c of plan.chunks()) if (!(c.series === 's1' && c.chunk === 2)) asm.add(c);
    expect(() => asm.finish()).toThrow(TornTraceError);
    expect(() => asm.finish()).toThrow(expect.objectContaining({ kind: 'missing-chunk', context: expect.objectContaining({ series: 's1', chunk: 2, runId: 'r1' }) }));
  });

  it('ignores leftovers of an earlier, larger write but not a stale chunk inside the current layout', () => {
    const t = makeTrace(1, 10, 3, false);
    const plan = planTraceWrite(t, 64, 'new');
    const leftover: TraceChunk = { seriesKind: 1, series: 'gone', chunk: 0, writeId: 'old', byteLength: 1, crc32: 0, data: Buffer.alloc(1) };
    const asm = new TraceAssembler(run, plan.manifest);
    asm.add(leftover);
    asm.add({ ...leftover, series: 's0', chunk: 5 });
    for (const c of plan.chunks()) asm.add(c);
    expect(bytesOf(asm.finish().svids.get('s0') as Float64Array).equals(bytesOf(t.svids.get('s0') as Float64Array))).toBe(true);
    const stale = new TraceAssembler(run, plan.manifest);
    const first = [...plan.chunks()][0] as TraceChunk;
    expect(() => stale.add({ ...first, writeId: 'old' })).toThrow(expect.objectContaining({ kind: 'torn-write' }));
    expect(() => stale.add({ ...leftover, writeId: 'new' })).toThrow(expect.objectContaining({ kind: 'malformed' }));
  });

  it('validates manifests: JSON, version, consistency of sizes', () => {
    const plan = planTraceWrite(makeTrace(1, 10, 1, false), 64, 'w');
    const good = stringifyTraceManifest(plan.manifest);
    expect(parseTraceManifest(good, {})).toEqual(plan.manifest);
    expect(() => parseTraceManifest(good.slice(0, 20), {})).toThrow(CorruptRecordError);
    expect(() => parseTraceManifest(JSON.stringify({ ...plan.manifest, v: 3 }), {})).toThrow(UnknownSchemaVersionError);
    const wrongBytes = { ...plan.manifest, series: [{ ...plan.manifest.series[0], bytes: 79 }] };
    expect(() => parseTraceManifest(JSON.stringify(wrongBytes), {})).toThrow(expect.objectContaining({ kind: 'malformed' }));
  });
});

describe('releaseTraceMemory', () => {
  it('gives back the one buffer holding every series of an assembled trace, once', () => {
    const t = makeTrace(3, 101, 7, true);
    const back = roundTrip(t, 64);
    const arrays = [...back.svids.values(), back.timing.kind === 'explicit' ? back.timing.timesSeconds : new Float64Array(0)];
    const buffer = arrays[0]?.buffer;
    expect(arrays.every((a) => a.buffer === buffer)).toBe(true);
    // Two f64 and one f32 series of 101 samples, plus the times: the samples' bytes (not the f32 one's padding).
    expect(releaseTraceMemory(back)).toBe(808 + 404 + 808 + 808);
    for (const a of arrays) expect(a.length).toBe(0);
    expect(buffer?.byteLength).toBe(0);
    expect(releaseTraceMemory(back)).toBe(0);
  });

  it('leaves alone a trace the store did not assemble', () => {
    const t = makeTrace(2, 50, 3, false);
    expect(releaseTraceMemory(t)).toBe(0);
    expect([...t.svids.values()].map((a) => a.length)).toEqual([50, 50]);
  });
});
