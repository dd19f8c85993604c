/** Options of {@link BlockArena}. */
export interface BlockArenaOptions {
  /** Most bytes the arena ever allocates (whole blocks); > 0. */
  readonly capacityBytes: number;
  /** Size of a block, a power of two from 64 to 65,536 (default 512). */
  readonly blockBytes?: number;
  /** Memory is allocated in chunks of this many bytes as blocks are needed, a multiple of `blockBytes` (default 4 MiB). */
  readonly chunkBytes?: number;
}

/** A chain of blocks holding one value: its first block and its length in bytes. */
export interface ArenaSlot {
  readonly head: number;
  readonly length: number;
}

const END = -1;

/**
 * Fixed-size blocks carved from a few large buffers that are allocated as the arena fills and
 * kept until {@link clear}: a value is written to a chain of blocks anywhere in the arena, so a
 * freed block serves the next value of any size and the arena never fragments. Its memory is
 * bounded by `capacityBytes` and is exactly what {@link allocatedBytes} says, unlike many small
 * malloc'ed values (or an in-memory SQLite database under churn), whose freed holes the C
 * allocator keeps resident.
 *
 * Values are copied in and out; nothing handed out refers to arena memory, so freeing a slot
 * never changes what a reader already holds.
 */
export class BlockArena {
  readonly capacityBytes: number;
  readonly blockBytes: number;
  private readonly blockShift: number;
  private readonly chunkShift: number;
  private readonly chunkMask: number;
  private readonly capacityBlocks: number;
  private readonly chunks: Buffer[] = [];
  /** next[b]: the block after b in its chain, or END. */
  private readonly next: Int32Array;
  /** Free blocks, a stack: the lowest ids pop first after a new chunk, recently freed ones after that. */
  private readonly free: Int32Array;
  private freeCount = 0;
  private allocatedBlocks = 0;

  constructor(options: BlockArenaOptions) {
    const blockBytes = options.blockBytes ?? 512;
    const chunkBytes = options.chunkBytes ?? 4 * 1024 * 1024;
    if (!(Number.isFinite(options.capacityBytes) && options.capacityBytes > 0)) {
      throw new RangeError(`capacityBytes must be > 0, got ${options.capacityBytes}`);
    }
    if (!(Number.isInteger(blockBytes) && blockBytes >= 64 && blockBytes <= 65536 && (blockBytes & (blockBytes - 1)) === 0)) {
      throw new RangeError(`blockBytes must be a power of two from 64 to 65536, got ${blockBytes}`);
    }
    const blocksPerChunk = chunkBytes / blockBytes;
    if (!(Number.isInteger(blocksPerChunk) && blocksPerChunk >= 1 && (blocksPerChunk & (blocksPerChunk - 1)) === 0)) {
      throw new RangeError(`chunkBytes must be a power-of-two multiple of blockBytes (${blockBytes}), got ${chunkBytes}`);
    }
    this.capacityBytes = options.capacityBytes;
    this.blockBytes = blockBytes;
    this.blockShift = Math.log2(blockBytes);
    this.chunkShift = Math.log2(blocksPerChunk);
    this.chunkMask = blocksPerChunk - 1;
    this.capacityBlocks = Math.floor(options.capacityBytes / blockBytes);
    if (this.capacityBlocks > 0x7fffffff) throw new RangeError(`capacityBytes ${options.capacityBytes} needs more than 2^31 blocks`);
    this.next = new Int32Array(this.capacityBlocks);
    this.free = new Int32Array(this.capacityBlocks);
  }

  /** Blocks a value of `length` bytes occupies (at least one). */
  blocksFor(length: number): number {
    return Math.max(1, Math.ceil(length / this.blockBytes));
  }

  /** Bytes a value of `length` bytes occupies: whole blocks. */
  bytesFor(length: number): number {
    return this.blocksFor(length) * this.blockBytes;
  }

  /** Whether a value of `length` bytes fits now (in free or not yet allocated blocks). */
  fits(length: number): boolean {
    return this.blocksFor(length) <= this.freeCount + (this.capacityBlocks - this.allocatedBlocks);
  }

  /**
   * Copies `data` into free blocks.
   * @returns its slot, or undefined when the arena has too few blocks left (nothing is written then).
   */
  write(data: Uint8Array): ArenaSlot | undefined {
    const need = this.blocksFor(data.length);
    if (!this.fits(data.length)) return undefined;
    while (this.freeCount < need) this.grow();
    const src = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    let head = END;
    let prev = END;
    // Consecutive blocks of one chunk are filled with one copy (see read).
    let runStart = END;
    let runFrom = 0;
    for (let i = 0, pos = 0; i < need; i++, pos += this.blockBytes) {
      const b = this.free[--this.freeCount] as number;
      if (prev === END) head = b;
      else this.next[prev] = b;
      this.next[b] = END;
      if (runStart !== END && !(b === prev + 1 && this.sameChunk(b, runStart))) {
        this.copyIn(src, runFrom, pos, runStart);
        runStart = END;
      }
      if (runStart === END) {
        runStart = b;
        runFrom = pos;
      }
      prev = b;
    }
    if (runStart !== END) this.copyIn(src, runFrom, data.length, runStart);
    return { head, length: data.length };
  }

  /** Copies `src[from, to)` into the blocks from `block` on (consecutive, in one chunk). */
  private copyIn(src: Buffer, from: number, to: number, block: number): void {
    if (to > from) src.copy(this.chunkOf(block), this.offsetOf(block), from, to);
  }

  private sameChunk(a: number, b: number): boolean {
    return a >>> this.chunkShift === b >>> this.chunkShift;
  }

  /** Copies a slot's bytes into `target` at `targetOffset`. The slot must be live (written, not freed). */
  read(slot: ArenaSlot, target: Buffer, targetOffset = 0): void {
    if (targetOffset < 0 || targetOffset + slot.length > target.length) {
      throw new RangeError(`reading ${slot.length} bytes at ${targetOffset} overruns a target of ${target.length}`);
    }
    // A value's blocks are mostly consecutive ids of one chunk (a new chunk and released slots hand
    // blocks out in ascending order): each such run is one copy, not one per block. A history read
    // copies thousands of blocks, and per-block copies cost a quarter of a defender's CPU (ADR 0014).
    let b = slot.head;
    let pos = 0;
    while (pos < slot.length) {
      let last = b;
      let bytes = this.blockBytes;
      while (pos + bytes < slot.length) {
        const nb = this.next[last] as number;
        if (nb !== last + 1 || !this.sameChunk(nb, b)) break;
        last = nb;
        bytes += this.blockBytes;
      }
      bytes = Math.min(bytes, slot.length - pos);
      const off = this.offsetOf(b);
      this.chunkOf(b).copy(target, targetOffset + pos, off, off + bytes);
      pos += bytes;
      b = this.next[last] as number;
    }
  }

  /** Returns a slot's blocks to the arena. The slot must be live; its bytes may be overwritten from now on. */
  release(slot: ArenaSlot): void {
    // Pushed so that the slot's first block is on top: the next write takes them in the slot's
    // (mostly ascending) order, and its blocks stay consecutive for read and write.
    const n = this.blocksFor(slot.length);
    let b = slot.head;
    for (let i = n - 1; i >= 0; i--) {
      // A caller's bug (a slot released twice); nothing is pushed then (the count moves only at the end).
      if (b === END) throw new RangeError('released slot is shorter than its length (released twice?)');
      const after = this.next[b] as number;
      this.next[b] = END;
      this.free[this.freeCount + i] = b;
      b = after;
    }
    this.freeCount += n;
  }

  /** Frees every block and the memory behind them. */
  clear(): void {
    this.chunks.length = 0;
    this.freeCount = 0;
    this.allocatedBlocks = 0;
  }

  /** Bytes in blocks that hold values. */
  get usedBytes(): number {
    return (this.allocatedBlocks - this.freeCount) * this.blockBytes;
  }

  /** Bytes of memory the arena holds (its chunks), used or free; at most `capacityBytes`. */
  get allocatedBytes(): number {
    return this.allocatedBlocks * this.blockBytes;
  }

  /** Allocates the next chunk (the last one may be partial) and pushes its blocks, lowest on top. */
  private grow(): void {
    const first = this.allocatedBlocks;
    const count = Math.min(this.chunkMask + 1, this.capacityBlocks - first);
    // Not zero-filled: a block is always written before it is read.
    this.chunks.push(Buffer.allocUnsafeSlow(count * this.blockBytes));
    for (let b = first + count - 1; b >= first; b--) this.free[this.freeCount++] = b;
    this.allocatedBlocks += count;
  }

  private chunkOf(block: number): Buffer {
    return this.chunks[block >>> this.chunkShift] as Buffer;
  }

  private offsetOf(block: number): number {
    return (block & this.chunkMask) << this.blockShift;
  }
}
