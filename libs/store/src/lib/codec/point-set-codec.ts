import { crc32 } from 'node:zlib';
import { CorruptRecordError, UnknownSchemaVersionError, type RecordContext, type UChartPoint } from '@defender/contracts';

/**
 * Binary encoding of one run's U-chart points (little-endian), schema version 1:
 *
 *   header (16 bytes): magic 0xD7 | version u8 | reserved u16 | count u32 | payload length u32 | CRC-32 of payload u32
 *   per point: key length u16 | key UTF-8 | value f64 | presence u8 (1 size, 2 limitsVersion, 4 chart) | flags u32
 *              [size f64] [limitsVersion u32] [chart count u8, then per entry: name length u8 | name UTF-8 | value f64]
 *
 * The length and checksum make a truncated or damaged blob a typed error instead of wrong points.
 */
export const POINT_SET_SCHEMA_VERSION = 1;
const MAGIC = 0xd7;
const HEADER = 16;

const HAS_SIZE = 1;
const HAS_LIMITS_VERSION = 2;
const HAS_CHART = 4;

/** Encodes points (already validated: finite values, bounded keys). */
export function encodePointSet(points: readonly UChartPoint[]): Buffer {
  let size = HEADER;
  const keys: Buffer[] = [];
  const charts: [Buffer, number][][] = [];
  for (const p of points) {
    const key = Buffer.from(p.indicatorKey, 'utf8');
    keys.push(key);
    size += 2 + key.length + 8 + 1 + 4;
    if (p.size !== undefined) size += 8;
    if (p.limitsVersion !== undefined) size += 4;
    const entries: [Buffer, number][] = [];
    if (p.chart !== undefined) {
      size += 1;
      for (const [name, v] of Object.entries(p.chart)) {
        const nb = Buffer.from(name, 'utf8');
        entries.push([nb, v]);
        size += 1 + nb.length + 8;
      }
    }
    charts.push(entries);
  }
  const buf = Buffer.allocUnsafe(size);
  let o = HEADER;
  points.forEach((p, i) => {
    const key = keys[i] as Buffer;
    o = buf.writeUInt16LE(key.length, o);
    o += key.copy(buf, o);
    o = buf.writeDoubleLE(p.value, o);
    const presence = (p.size !== undefined ? HAS_SIZE : 0) | (p.limitsVersion !== undefined ? HAS_LIMITS_VERSION : 0) | (p.chart !== undefined ? HAS_CHART : 0);
    o = buf.writeUInt8(presence, o);
    o = buf.writeUInt32LE(p.flags >>> 0, o);
    if (p.size !== undefined) o = buf.writeDoubleLE(p.size, o);
    if (p.limitsVersion !== undefined) o = buf.writeUInt32LE(p.limitsVersion, o);
    if (p.chart !== undefined) {
      const entries = charts[i] as [Buffer, number][];
      o = buf.writeUInt8(entries.length, o);
      for (const [nb, v] of entries) {
        o = buf.writeUInt8(nb.length, o);
        o += nb.copy(buf, o);
        o = buf.writeDoubleLE(v, o);
      }
    }
  });
  buf.writeUInt8(MAGIC, 0);
  buf.writeUInt8(POINT_SET_SCHEMA_VERSION, 1);
  buf.writeUInt16LE(0, 2);
  buf.writeUInt32LE(points.length, 4);
  buf.writeUInt32LE(size - HEADER, 8);
  buf.writeUInt32LE(crc32(buf.subarray(HEADER)), 12);
  return buf;
}

class Truncated extends Error {}

/**
 * Decodes a point set.
 * @throws UnknownSchemaVersionError for a version other than 1.
 * @throws CorruptRecordError `truncated` (shorter than its header says), `checksum-mismatch`,
 *   `malformed` (bad magic, trailing bytes, bad UTF-8) or `invalid-value` (a non-finite value).
 */
export function decodePointSet(buf: Buffer, context: RecordContext): UChartPoint[] {
  if (buf.length < HEADER) throw new CorruptRecordError('truncated', context, `point set of ${buf.length} bytes is shorter than its ${HEADER}-byte header`);
  if (buf.readUInt8(0) !== MAGIC) throw new CorruptRecordError('malformed', context, 'not a point set (bad magic byte)');
  const version = buf.readUInt8(1);
  if (version !== POINT_SET_SCHEMA_VERSION) throw new UnknownSchemaVersionError(context, version, [POINT_SET_SCHEMA_VERSION]);
  const count = buf.readUInt32LE(4);
  const payloadLength = buf.readUInt32LE(8);
  const actual = buf.length - HEADER;
  if (actual < payloadLength) {
    throw new CorruptRecordError('truncated', context, `point set payload has ${actual} of ${payloadLength} bytes`);
  }
  if (actual > payloadLength) throw new CorruptRecordError('malformed', context, `${actual - payloadLength} bytes after the point set payload`);
  if (crc32(buf.subarray(HEADER)) !== buf.readUInt32LE(12)) throw new CorruptRecordError('checksum-mismatch', context, 'point set CRC-32 does not match');

  const points: UChartPoint[] = [];
  let o = HEADER;
  const need = (n: number): void => {
    if (o + n > buf.length) throw new Truncated();
  };
  try {
    for (let i = 0; i < count; i++) {
      need(2);
      const keyLen = buf.readUInt16LE(o);
      o += 2;
      need(keyLen + 13);
      const indicatorKey = buf.toString('utf8', o, o + keyLen);
      o += keyLen;
      const value = buf.readDoubleLE(o);
      o += 8;
      const presence = buf.readUInt8(o);
      o += 1;
      const flags = buf.readUInt32LE(o);
      o += 4;
      if (!Number.isFinite(value)) {
        throw new CorruptRecordError('invalid-value', { ...context, indicatorKey, column: 'value' }, `non-finite point value ${value}`);
      }
      const p: { -readonly [K in keyof UChartPoint]: UChartPoint[K] } = { indicatorKey, value, flags };
      if (presence & HAS_SIZE) {
        need(8);
        p.size = buf.readDoubleLE(o);
        o += 8;
      }
      if (presence & HAS_LIMITS_VERSION) {
        need(4);
        p.limitsVersion = buf.readUInt32LE(o);
        o += 4;
      }
      if (presence & HAS_CHART) {
        need(1);
        const n = buf.readUInt8(o);
        o += 1;
        const chart: Record<string, number> = {};
        for (let j = 0; j < n; j++) {
          need(1);
          const nameLen = buf.readUInt8(o);
          o += 1;
          need(nameLen + 8);
          const name = buf.toString('utf8', o, o + nameLen);
          o += nameLen;
          chart[name] = buf.readDoubleLE(o);
          o += 8;
        }
        p.chart = chart;
      }
      points.push(p);
    }
  } catch (err) {
    if (err instanceof Truncated) throw new CorruptRecordError('truncated', context, `point set ends inside point ${points.length} of ${count}`);
    throw err;
  }
  if (o !== buf.length) throw new CorruptRecordError('malformed', context, `${buf.length - o} bytes after ${count} points`);
  return points;
}
