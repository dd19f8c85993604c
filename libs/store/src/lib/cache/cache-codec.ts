import type { UChartPoint } from '@defender/contracts';

/**
 * Strings (indicator keys, chart state names) of one cached chamber, each stored once: cached runs
 * refer to them by index, and decoding hands out the same string objects instead of allocating a
 * new one per point and run. Lives and dies with the chamber's cache entry.
 */
export class StringTable {
  private readonly ids = new Map<string, number>();
  private readonly strings: string[] = [];
  /** Accounted bytes (UTF-16 size plus a fixed allowance per entry). */
  bytes = 0;

  /** Index of `s`, added if new. */
  id(s: string): number {
    let id = this.ids.get(s);
    if (id === undefined) {
      id = this.strings.length;
      if (id > 0xffff) throw new RangeError('a cached chamber has more than 65,536 distinct indicator keys and chart names');
      this.ids.set(s, id);
      this.strings.push(s);
      this.bytes += 2 * s.length + 64;
    }
    return id;
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
  for (const p of points) {
    o = buf.writeUInt16LE(table.id(p.indicatorKey), o);
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
        o = buf.writeUInt16LE(table.id(name), o);
        o = buf.writeDoubleLE(v, o);
      }
    }
  }
  if (o !== size) throw new Error(`cache encoding wrote ${o} of ${size} bytes`);
  return buf;
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
