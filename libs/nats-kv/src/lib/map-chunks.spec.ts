import fc from 'fast-check';
import {
  AssignmentMap,
  AssignmentMapHead,
  assignmentMapHeadSchema,
  InvalidMessageError,
  parseStoredMapHead,
} from '@defender/contracts';
import { chunksHolding, decodeMap, decodeOwnerChunks, DEFAULT_CHUNK_BYTES, encodeMap, MAX_MAP_VALUE_BYTES, valueDigest } from './map-chunks';
import { bigMap } from './testing/big-map';
import { chunkSlotFor } from './assignment-map';

const enc = (s: string) => new TextEncoder().encode(s);

/** The head as AssignmentMapBucket stores it (slot and revisions filled in). */
function headOf(
  map: AssignmentMap,
  chunkBytes?: number,
): { head: AssignmentMapHead; chunks: Uint8Array[]; text: string } {
  const e = encodeMap(map, chunkBytes);
  const text = JSON.stringify({
    ...e.head,
    chunks: { slot: 0, revisions: e.chunks.map((_, i) => i + 1), ...e.head.chunks },
  });
  return { head: assignmentMapHeadSchema.parse(JSON.parse(text)), chunks: e.chunks.map(enc), text };
}

describe('map chunks (ADR 0009)', () => {
  it('20,000 chambers, every one moved, 200 defenders: chunks and head far below the value limit, round trip exact', () => {
    const map = bigMap(3, 20_000, 200, '12345678901234567890', 1_764_237_600_000);
    const { head, chunks, text } = headOf(map);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.byteLength).toBeLessThanOrEqual(DEFAULT_CHUNK_BYTES);
    // The head grows with defenders, not chambers: 200 defenders and 20,000 chambers stay under 32 KB.
    expect(Buffer.byteLength(text)).toBeLessThan(32 * 1024);
    expect(Buffer.byteLength(text)).toBeLessThan(MAX_MAP_VALUE_BYTES);
    expect(decodeMap(head, chunks)).toEqual(map);
    expect(parseStoredMapHead(text)).toEqual({ kind: 'chunked', head });
  });

  it("entries are grouped by owner: the head names each chunk's first and last owner", () => {
    const map = bigMap(1, 3000, 5);
    const { head, chunks } = headOf(map, 4096);
    chunks.forEach((c, i) => {
      const entries = (JSON.parse(Buffer.from(c).toString()) as { entries: [string, string, number][] })
        .entries;
      expect([entries[0]![1], entries.at(-1)![1]]).toEqual(head.chunks.owners[i]);
    });
  });

  it('round trip for any map and chunk size (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1024, max: 8192 }),
        fc.boolean(),
        (n, d, bytes, moved) => {
          const map = bigMap(2, n, d, '9', moved ? 5 : undefined);
          const { head, chunks } = headOf(map, bytes);
          for (const c of chunks) expect(c.byteLength).toBeLessThanOrEqual(bytes);
          expect(decodeMap(head, chunks)).toEqual(map);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a chunk of another publication is never assembled into the map', () => {
    const a = headOf(bigMap(4, 500, 3), 2048);
    const b = headOf(bigMap(5, 500, 3), 2048);
    expect(a.chunks.length).toBe(b.chunks.length);
    const mixed = [...a.chunks];
    mixed[1] = b.chunks[1]!;
    expect(() => decodeMap(a.head, mixed)).toThrow(/chunk 1 does not match the head's digest/);
    // Even with a digest that matches (a forged head): the chunk names its version.
    const forged: AssignmentMapHead = {
      ...a.head,
      chunks: {
        ...a.head.chunks,
        digests: a.head.chunks.digests.map((d, i) => (i === 1 ? valueDigest(b.chunks[1]!) : d)),
      },
    };
    expect(() => decodeMap(forged, mixed)).toThrow(/chunk 1 was written for v5/);
    expect(() => decodeMap(a.head, a.chunks.slice(1))).toThrow(InvalidMessageError);
  });

  /** `owner`'s part of `map`: its assignments and lastMovedAt, every other field the whole map's. */
  const ownPart = (map: AssignmentMap, owner: string): AssignmentMap => {
    const mine = Object.keys(map.assignments).filter((c) => map.assignments[c] === owner);
    return {
      ...map,
      assignments: Object.fromEntries(mine.map((c) => [c, owner])),
      lastMovedAt: Object.fromEntries(mine.filter((c) => c in map.lastMovedAt).map((c) => [c, map.lastMovedAt[c]!])),
    };
  };
  const readFor = (h: { head: AssignmentMapHead; chunks: Uint8Array[] }, owner: string) =>
    decodeOwnerChunks(h.head, owner, chunksHolding(h.head, owner).map((index) => ({ index, value: h.chunks[index]! })));

  it('20,000 chambers / 200 defenders: each defender reads the head and at most 2 of the 33 chunks, and gets exactly its chambers', () => {
    const map = bigMap(3, 20_000, 200, '12345678901234567890', 1_764_237_600_000);
    const h = headOf(map);
    const whole = Buffer.byteLength(h.text) + h.chunks.reduce((n, c) => n + c.byteLength, 0);
    let most = 0;
    for (let d = 0; d < 200; d++) {
      const id = `defender-${d}`;
      const held = chunksHolding(h.head, id);
      expect({ id, chunks: held.length <= 2 }).toEqual({ id, chunks: true });
      const bytes = Buffer.byteLength(h.text) + held.reduce((n, i) => n + h.chunks[i]!.byteLength, 0);
      most = Math.max(most, bytes);
      expect(readFor(h, id)).toEqual(ownPart(map, id));
    }
    expect(h.chunks.length).toBe(33);
    // At most the head and two chunks: under a tenth of the whole map.
    expect(most).toBeLessThan(whole / 10);
    // A defender the map gives nothing reads no chunk.
    expect(chunksHolding(h.head, 'defender-200')).toEqual([]);
    expect(readFor(h, 'defender-200').assignments).toEqual({});
  });

  it("a defender's part, for any map and chunk size, is exactly its chambers (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1024, max: 8192 }),
        (n, d, bytes) => {
          const map = bigMap(2, n, d, '9', 5);
          const h = headOf(map, bytes);
          for (let i = 0; i < d; i++) expect(readFor(h, `defender-${i}`)).toEqual(ownPart(map, `defender-${i}`));
        },
      ),
      { numRuns: 60 },
    );
  });

  it("a defender's part is never assembled from another publication's chunk, from fewer chunks than the head names, or short of its count", () => {
    const a = headOf(bigMap(4, 500, 3), 2048);
    const b = headOf(bigMap(5, 500, 3), 2048);
    const id = 'defender-1';
    const wanted = chunksHolding(a.head, id);
    expect(wanted.length).toBeGreaterThan(1);
    const swapped = wanted.map((index, k) => ({ index, value: (k === 0 ? b : a).chunks[index]! }));
    expect(() => decodeOwnerChunks(a.head, id, swapped)).toThrow(/does not match the head's digest/);
    const fewer = wanted.slice(1).map((index) => ({ index, value: a.chunks[index]! }));
    expect(() => decodeOwnerChunks(a.head, id, fewer)).toThrow(/it needs/);
    // A head whose count for the defender is not what its chunks hold (encodeMap refuses to write one).
    const info = a.head.defenderInfo[id]!;
    const forged: AssignmentMapHead = { ...a.head, defenderInfo: { ...a.head.defenderInfo, [id]: { ...info, chambers: info.chambers + 1 } } };
    expect(() => decodeOwnerChunks(forged, id, wanted.map((index) => ({ index, value: a.chunks[index]! })))).toThrow(
      /assignments of defender-1 for defenderInfo.chambers/,
    );
  });

  it("refuses to publish a map whose defenderInfo counts differ from its assignments (scoped readers rely on them)", () => {
    const map = bigMap(1, 30, 3);
    const info = map.defenderInfo['defender-2']!;
    const wrong = { ...map, defenderInfo: { ...map.defenderInfo, 'defender-2': { ...info, chambers: info.chambers - 1 } } };
    expect(() => encodeMap(wrong)).toThrow(/not published: defenderInfo.defender-2.chambers is 9, it owns 10/);
  });

  it('a whole map (before ADR 0009) is still parsed as one; garbage is an InvalidMessageError', () => {
    const map = bigMap(1, 10, 2);
    expect(parseStoredMapHead(JSON.stringify(map))).toEqual({ kind: 'whole', map });
    expect(() => parseStoredMapHead('{"schema":2}')).toThrow(/invalid assignment map head/);
    expect(() => parseStoredMapHead('not json')).toThrow(/invalid assignment map: invalid-json/);
  });

  it('refuses a chunk size that cannot hold an entry', () => {
    expect(() => encodeMap(bigMap(1, 3, 1), 100)).toThrow(RangeError);
  });

  it('slots: even tokens write 0/1, odd tokens 2/3, never the one the current head uses', () => {
    expect([
      chunkSlotFor('6', null),
      chunkSlotFor('6', 0),
      chunkSlotFor('6', 1),
      chunkSlotFor('6', 2),
    ]).toEqual([0, 1, 0, 0]);
    expect([
      chunkSlotFor('7', null),
      chunkSlotFor('7', 2),
      chunkSlotFor('7', 3),
      chunkSlotFor('7', 0),
    ]).toEqual([2, 3, 2, 2]);
    expect(chunkSlotFor('12345678901234567891', 2)).toBe(3);
  });
});
