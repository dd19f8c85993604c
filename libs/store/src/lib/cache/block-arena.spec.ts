import fc from 'fast-check';
import { BlockArena, type ArenaSlot } from './block-arena';

function bytes(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 31 + i * 7) & 0xff;
  return b;
}

function readBack(arena: BlockArena, slot: ArenaSlot): Buffer {
  const out = Buffer.alloc(slot.length);
  arena.read(slot, out);
  return out;
}

describe('BlockArena', () => {
  it('round-trips values of any length, block-aligned or not, and accounts whole blocks', () => {
    const arena = new BlockArena({ capacityBytes: 64 * 1024, blockBytes: 64, chunkBytes: 1024 });
    const lengths = [0, 1, 63, 64, 65, 128, 1000, 1024, 5000];
    const slots = lengths.map((n, i) => ({ data: bytes(n, i), slot: arena.write(bytes(n, i)) }));
    for (const { data, slot } of slots) expect(readBack(arena, slot!)).toEqual(data);
    const blocks = lengths.reduce((s, n) => s + Math.max(1, Math.ceil(n / 64)), 0);
    expect(arena.usedBytes).toBe(blocks * 64);
    // Chunks of 1 KiB, allocated as needed.
    expect(arena.allocatedBytes).toBe(Math.ceil((blocks * 64) / 1024) * 1024);
  });

  it('reads into a target at an offset and refuses to overrun it', () => {
    const arena = new BlockArena({ capacityBytes: 4096, blockBytes: 64 });
    const slot = arena.write(bytes(100, 3))!;
    const target = Buffer.alloc(110, 0xee);
    arena.read(slot, target, 10);
    expect(target.subarray(10)).toEqual(bytes(100, 3));
    expect(target.subarray(0, 10)).toEqual(Buffer.alloc(10, 0xee));
    expect(() => arena.read(slot, target, 11)).toThrow(RangeError);
  });

  it('refuses a value that does not fit, writing nothing, and takes it once blocks are released', () => {
    const arena = new BlockArena({ capacityBytes: 1024, blockBytes: 256, chunkBytes: 512 });
    const a = arena.write(bytes(600, 1))!; // 3 blocks
    expect(arena.fits(300)).toBe(false);
    expect(arena.write(bytes(300, 2))).toBeUndefined();
    expect(arena.usedBytes).toBe(768);
    arena.release(a);
    expect(arena.usedBytes).toBe(0);
    const b = arena.write(bytes(1024, 4))!;
    expect(readBack(arena, b)).toEqual(bytes(1024, 4));
    expect(arena.allocatedBytes).toBe(1024);
  });

  it('never allocates more than its capacity, and clear() frees it all', () => {
    const arena = new BlockArena({ capacityBytes: 10_000, blockBytes: 512, chunkBytes: 4096 });
    const slots: ArenaSlot[] = [];
    for (let i = 0; ; i++) {
      const s = arena.write(bytes(700, i));
      if (!s) break;
      slots.push(s);
    }
    // floor(10,000 / 512) = 19 blocks; 700 bytes take 2.
    expect(slots).toHaveLength(9);
    expect(arena.allocatedBytes).toBe(19 * 512);
    expect(arena.allocatedBytes).toBeLessThanOrEqual(arena.capacityBytes);
    arena.clear();
    expect([arena.usedBytes, arena.allocatedBytes]).toEqual([0, 0]);
    expect(readBack(arena, arena.write(bytes(9000, 7))!)).toEqual(bytes(9000, 7));
  });

  it('rejects bad options', () => {
    expect(() => new BlockArena({ capacityBytes: 0 })).toThrow(/capacityBytes/);
    expect(() => new BlockArena({ capacityBytes: Number.NaN })).toThrow(/capacityBytes/);
    expect(() => new BlockArena({ capacityBytes: 4096, blockBytes: 100 })).toThrow(/blockBytes/);
    expect(() => new BlockArena({ capacityBytes: 4096, blockBytes: 32 })).toThrow(/blockBytes/);
    expect(() => new BlockArena({ capacityBytes: 4096, blockBytes: 512, chunkBytes: 1536 })).toThrow(/chunkBytes/);
    expect(() => new BlockArena({ capacityBytes: 4096, blockBytes: 512, chunkBytes: 256 })).toThrow(/chunkBytes/);
  });

  // Model: every live value reads back unchanged whatever was written and released around it, used
  // bytes are the live values' whole blocks, and memory never exceeds the capacity nor grows while
  // released blocks could serve (freed blocks are reused for values of any size).
  it('keeps every live value intact under random writes and releases (property)', () => {
    type Op = { kind: 'write'; length: number } | { kind: 'release'; pick: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('write' as const), length: fc.integer({ min: 0, max: 3000 }) }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 300 }), (ops) => {
        const arena = new BlockArena({ capacityBytes: 32 * 1024, blockBytes: 128, chunkBytes: 2048 });
        const live: { slot: ArenaSlot; data: Buffer }[] = [];
        let seed = 0;
        for (const o of ops) {
          if (o.kind === 'write') {
            const data = bytes(o.length, seed++);
            const need = Math.max(1, Math.ceil(o.length / 128)) * 128;
            const [usedBefore, allocatedBefore] = [arena.usedBytes, arena.allocatedBytes];
            const slot = arena.write(data);
            if (slot) live.push({ slot, data });
            else expect(need).toBeGreaterThan(32 * 1024 - usedBefore);
            // Memory grows only when the free blocks could not hold the value.
            if (arena.allocatedBytes > allocatedBefore) expect(allocatedBefore - usedBefore).toBeLessThan(need);
          } else if (live.length > 0) {
            const [gone] = live.splice(o.pick % live.length, 1);
            arena.release(gone!.slot);
          }
          const used = live.reduce((s, l) => s + Math.max(1, Math.ceil(l.slot.length / 128)) * 128, 0);
          expect(arena.usedBytes).toBe(used);
          expect(arena.allocatedBytes).toBeLessThanOrEqual(32 * 1024);
        }
        for (const l of live) expect(readBack(arena, l.slot)).toEqual(l.data);
      }),
      { seed: 20261126, numRuns: 200 },
    );
  });

  it('reuses released blocks before allocating memory', () => {
    const arena = new BlockArena({ capacityBytes: 1024 * 1024, blockBytes: 512, chunkBytes: 64 * 1024 });
    const slots: ArenaSlot[] = [];
    for (let i = 0; i < 100; i++) slots.push(arena.write(bytes(600, i))!); // 200 blocks = 100 KiB
    const allocated = arena.allocatedBytes;
    // Churn: release values and write values of other sizes into the same room, many times over.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < slots.length; i += 2) arena.release(slots[i]!);
      for (let i = 0; i < slots.length; i += 2) slots[i] = arena.write(bytes(round % 2 === 0 ? 1000 : 200, round * 1000 + i))!;
      for (let i = 0; i < slots.length; i += 2) arena.release(slots[i]!);
      for (let i = 0; i < slots.length; i += 2) slots[i] = arena.write(bytes(600, round * 1000 + i))!;
    }
    expect(arena.allocatedBytes).toBe(allocated);
    for (let i = 1; i < slots.length; i += 2) expect(readBack(arena, slots[i]!)).toEqual(bytes(600, i));
    expect(readBack(arena, slots[0]!)).toEqual(bytes(600, 49 * 1000));
  });
  it('copies a value held in consecutive blocks of one chunk at once, also after its blocks were released and reused', () => {
    const arena = new BlockArena({ capacityBytes: 256 * 1024, blockBytes: 512, chunkBytes: 64 * 1024 });
    const copy = jest.spyOn(Buffer.prototype, 'copy');
    try {
      const a = arena.write(bytes(40 * 512 + 100, 1))!; // 41 blocks of the first chunk
      expect(copy).toHaveBeenCalledTimes(1);
      copy.mockClear();
      expect(readBack(arena, a)).toEqual(bytes(40 * 512 + 100, 1));
      expect(copy).toHaveBeenCalledTimes(1);
      // Released and written again: the blocks come back in ascending order, so still one copy each way.
      arena.release(a);
      copy.mockClear();
      const b = arena.write(bytes(30 * 512, 2))!;
      expect(readBack(arena, b)).toEqual(bytes(30 * 512, 2));
      expect(copy).toHaveBeenCalledTimes(2);
      // A value across the first chunk's end (128 blocks a chunk) is copied once per chunk.
      const c = arena.write(bytes(120 * 512, 3))!;
      copy.mockClear();
      expect(readBack(arena, c)).toEqual(bytes(120 * 512, 3));
      expect(copy.mock.calls.length).toBeLessThanOrEqual(3);
    } finally {
      copy.mockRestore();
    }
  });
});
