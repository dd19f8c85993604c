import type { UChartPoint } from '@defender/contracts';

/**
 * Strings (indicator keys, chart state names) of one cached chamber, each stored once: cached runs
 * refer to them by index, and decoding hands out the same string objects instead of allocating a
 * new one per point and run. Lives and dies with the chamber's cache entry.
 *
 * It keeps only the array between encodes (a defender caches thousands of chambers; a Map per
 * chamber was the largest item of its live heap). Lookups try a hint first: a chamber's runs list
 * their indicators in the same order, so the i-th key of a run is usually the i-th key of the table.
 * A miss builds a lookup index that lives until {@link release} (the end of one encode).
 */
export class StringTable {
  private readonly strings: string[] = [];
  /** Ids of the chart state names and recipes (a handful per chamber), scanned before the index. */
  private readonly names: number[] = [];
  private index: Map<string, number> | undefined;
  /** Accounted bytes (UTF-16 size plus a fixed allowance per entry). */
  bytes = 0;

  /** Index of `s`, added if new; `hint` is where it probably is (or a few entries after). */
  id(s: string, hint = -1): number {
    if (hint >= 0) {
      // A few entries beyond the hint: chart names first seen between a run's keys sit there.
      for (let k = hint, end = Math.min(hint + 4, this.strings.length); k < end; k++) if (this.strings[k] === s) return k;
    }
    if (this.index === undefined) {
      this.index = new Map();
      for (let i = 0; i < this.strings.length; i++) this.index.set(this.strings[i] as string, i);
    }
    let id = this.index.get(s);
    if (id === undefined) {
      id = this.strings.length;
      if (id > 0xffff) throw new RangeError('a cached chamber has more than 65,536 distinct indicator keys and chart names');
      this.index.set(s, id);
      this.strings.push(s);
      this.bytes += 2 * s.length + 24;
    }
    return id;
  }

  /** Index of `s`, a name many runs share (a chart state name, a recipe), added if new. */
  nameId(s: string): number {
    for (const id of this.names) if (this.strings[id] === s) return id;
    const id = this.id(s);
    if (this.names.length < 32) this.names.push(id);
    return id;
  }

  /** Drops the lookup index built by a missed hint (call when an encode is done). */
  release(): void {
    this.index = undefined;
  }

  /** The string at `id`. @throws RangeError for an index never handed out (a bug, not bad data). */
  at(id: number): string {
    const s = this.strings[id];
    if (s === undefined) throw new RangeError(`string table has no entry ${id}`);
    return s;
  }

  get size(): number {
    return this.strings.length;
  }
}

const HAS_SIZE = 1;
const HAS_LIMITS_VERSION = 2;
const HAS_CHART = 4;

/**
 * Encodes a run's points for the in-memory history cache (not for storage: no version or checksum,
 * strings as indices into the chamber's {@link StringTable}; the points were validated by the
 * evaluator or decoded from the store). Little-endian:
 *
 *   count u32, then per point: key u16 | value f64 | presence u8 | flags u32 | [size f64]
 *   [limitsVersion u32] [chart count u8, then per entry: name u16 | value f64]
 */
export function encodeCachedPoints(points: readonly UChartPoint[], table: StringTable): Buffer {
  let size = 4;
  for (const p of points) {
    size += 2 + 8 + 1 + 4;
    if (p.size !== undefined) size += 8;
    if (p.limitsVersion !== undefined) size += 4;
    if (p.chart !== undefined) size += 1 + 10 * Object.keys(p.chart).length;
  }
  const buf = Buffer.allocUnsafe(size);
  let o = buf.writeUInt32LE(points.length, 0);
  try {
    o = encodeInto(buf, o, points, table);
  } finally {
    table.release();
  }
  if (o !== size) throw new Error(`cache encoding wrote ${o} of ${size} bytes`);
  return buf;
}

function encodeInto(buf: Buffer, start: number, points: readonly UChartPoint[], table: StringTable): number {
  let o = start;
  // A run's keys come in the order of the chamber's earlier runs: each is probably just after the previous one.
  let next = 0;
  for (const p of points) {
    const key = table.id(p.indicatorKey, next);
    next = key + 1;
    o = buf.writeUInt16LE(key, o);
    o = buf.writeDoubleLE(p.value, o);
    const presence = (p.size !== undefined ? HAS_SIZE : 0) | (p.limitsVersion !== undefined ? HAS_LIMITS_VERSION : 0) | (p.chart !== undefined ? HAS_CHART : 0);
    o = buf.writeUInt8(presence, o);
    o = buf.writeUInt32LE(p.flags >>> 0, o);
    if (p.size !== undefined) o = buf.writeDoubleLE(p.size, o);
    if (p.limitsVersion !== undefined) o = buf.writeUInt32LE(p.limitsVersion, o);
    if (p.chart !== undefined) {
      const entries = Object.entries(p.chart);
      o = buf.writeUInt8(entries.length, o);
      for (const [name, v] of entries) {
        o = buf.writeUInt16LE(table.nameId(name), o);
        o = buf.writeDoubleLE(v, o);
      }
    }
  }
  return o;
}

/** Decodes what {@link encodeCachedPoints} wrote with the same table. */
export function decodeCachedPoints(buf: Buffer, table: StringTable): UChartPoint[] {
  const count = buf.readUInt32LE(0);
  const points = new Array<UChartPoint>(count);
  let o = 4;
  for (let i = 0; i < count; i++) {
    const indicatorKey = table.at(buf.readUInt16LE(o));
    const value = buf.readDoubleLE(o + 2);
    const presence = buf[o + 10] as number;
    const flags = buf.readUInt32LE(o + 11);
    o += 15;
    const p: { -readonly [K in keyof UChartPoint]: UChartPoint[K] } = { indicatorKey, value, flags };
    if (presence & HAS_SIZE) {
      p.size = buf.readDoubleLE(o);
      o += 8;
    }
    if (presence & HAS_LIMITS_VERSION) {
      p.limitsVersion = buf.readUInt32LE(o);
      o += 4;
    }
    if (presence & HAS_CHART) {
      const n = buf[o] as number;
      o += 1;
      const chart: Record<string, number> = {};
      for (let j = 0; j < n; j++) {
        chart[table.at(buf.readUInt16LE(o))] = buf.readDoubleLE(o + 2);
        o += 10;
      }
      p.chart = chart;
    }
    points[i] = p;
  }
  if (o !== buf.length) throw new Error(`cached point set has ${buf.length - o} bytes after ${count} points`);
  return points;
}

/** Number of points in what {@link encodeCachedPoints} wrote, without decoding them. */
export function cachedPointCount(buf: Buffer): number {
  return buf.readUInt32LE(0);
}
