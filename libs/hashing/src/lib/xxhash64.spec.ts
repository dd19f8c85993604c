import fc from 'fast-check';
import {
  bigIntToHash64,
  compareHash64,
  hash64ToBigInt,
  InvalidHashConfigError,
  xxh64,
  xxh64Digest,
  xxh64Hash64,
  xxh64Hex,
} from '../index';

const M64 = (1n << 64n) - 1n;
const P1 = 11400714785074694791n;
const P2 = 14029467366897019727n;
const P3 = 1609587929392839161n;
const P4 = 9650029242287828579n;
const P5 = 2870177450012600261n;
const PRIME32 = 2654435761n;
/** The sanity-buffer generator's multiplier (xsum_sanity_check.c `PRIME64`, not XXH_PRIME64_1). */
const GEN_PRIME64 = 11400714785074694797n;

/** Independent XXH64 (seed 0) written from the specification, in BigInt, as a cross-check. */
function referenceXxh64(buf: Uint8Array): bigint {
  const rotl = (x: bigint, r: number) => ((x << BigInt(r)) | (x >> BigInt(64 - r))) & M64;
  const round = (acc: bigint, input: bigint) => (rotl((acc + input * P2) & M64, 31) * P1) & M64;
  const merge = (acc: bigint, val: bigint) => ((acc ^ round(0n, val)) * P1 + P4) & M64;
  const u64 = (i: number) => {
    let v = 0n;
    for (let b = 7; b >= 0; b--) v = (v << 8n) | BigInt(buf[i + b]!);
    return v;
  };
  const u32 = (i: number) =>
    BigInt((buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24)) >>> 0);
  const len = buf.length;
  let p = 0;
  let h: bigint;
  if (len >= 32) {
    let v1 = (P1 + P2) & M64;
    let v2 = P2;
    let v3 = 0n;
    let v4 = (0n - P1) & M64;
    while (p <= len - 32) {
      v1 = round(v1, u64(p));
      v2 = round(v2, u64(p + 8));
      v3 = round(v3, u64(p + 16));
      v4 = round(v4, u64(p + 24));
      p += 32;
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) & M64;
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = P5;
  }
  h = (h + BigInt(len)) & M64;
  for (; p + 8 <= len; p += 8) h = (rotl(h ^ round(0n, u64(p)), 27) * P1 + P4) & M64;
  if (p + 4 <= len) {
    h = (rotl(h ^ ((u32(p) * P1) & M64), 23) * P2 + P3) & M64;
    p += 4;
  }
  for (; p < len; p++) h = (rotl(h ^ ((BigInt(buf[p]!) * P5) & M64), 11) * P1) & M64;
  h ^= h >> 33n;
  h = (h * P2) & M64;
  h ^= h >> 29n;
  h = (h * P3) & M64;
  return h ^ (h >> 32n);
}

/** The xxHash sanity buffer (xsum_sanity_check.c): byteGen = PRIME32, byte = gen >> 56, gen *= PRIME64. */
function sanityBuffer(len: number): Buffer {
  const buf = Buffer.alloc(len);
  let gen = PRIME32;
  for (let i = 0; i < len; i++) {
    buf[i] = Number(gen >> 56n);
    gen = (gen * GEN_PRIME64) & M64;
  }
  return buf;
}

describe('xxh64 (seed 0)', () => {
  // XSUM_XXH64_testdata (seed 0) from the xxHash reference's xsum_sanity_check.c.
  const sanity = sanityBuffer(222);
  it.each([
    [0, 0xef46db3751d8e999n],
    [1, 0xe934a84adb052768n],
    [3, 0xff7e1959cb50794an],
    [4, 0x9136a0dca57457een],
    [14, 0x8282dcc4994e35c8n],
    [222, 0xb641ae8cb691c174n],
  ])('matches the reference sanity vector for %i bytes', (len, expected) => {
    const input = sanity.subarray(0, len);
    expect(xxh64(input)).toBe(expected);
    expect(referenceXxh64(input)).toBe(expected);
  });

  it.each([
    ['', 'ef46db3751d8e999'],
    ['a', 'd24ec4f1a98c6e5b'],
    ['abc', '44bc2cf5ad770999'],
    ['The quick brown fox jumps over the lazy dog', '0b242d361fda71bc'],
  ])('hashes the string %j to %s', (input, hex) => {
    expect(xxh64Hex(input)).toBe(hex);
    expect(xxh64(input)).toBe(BigInt(`0x${hex}`));
    expect(hash64ToBigInt(xxh64Hash64(input))).toBe(BigInt(`0x${hex}`));
  });

  it('hashes strings as UTF-8', () => {
    expect(xxh64('défenseur')).toBe(xxh64(Buffer.from('défenseur', 'utf8')));
    expect(xxh64(new Uint8Array(Buffer.from('tool001:chamber1')))).toBe(xxh64('tool001:chamber1'));
  });

  it('returns an 8-byte big-endian digest', () => {
    const d = xxh64Digest('');
    expect(d).toHaveLength(8);
    expect(d.toString('hex')).toBe('ef46db3751d8e999');
  });

  it('agrees with an independent implementation on arbitrary inputs', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        expect(xxh64(bytes)).toBe(referenceXxh64(bytes));
      }),
      { seed: 1001, numRuns: 300 },
    );
  });
});

describe('Hash64 helpers', () => {
  const u64 = fc.bigInt({ min: 0n, max: M64 });

  it('round-trips between BigInt and halves', () => {
    fc.assert(
      fc.property(u64, (v) => {
        expect(hash64ToBigInt(bigIntToHash64(v))).toBe(v);
      }),
      { seed: 1002 },
    );
  });

  it('orders halves exactly like the unsigned 64-bit values', () => {
    fc.assert(
      fc.property(u64, u64, (a, b) => {
        expect(Math.sign(compareHash64(bigIntToHash64(a), bigIntToHash64(b)))).toBe(
          a < b ? -1 : a > b ? 1 : 0,
        );
      }),
      { seed: 1003 },
    );
  });

  it('rejects values outside the unsigned 64-bit range', () => {
    expect(() => bigIntToHash64(-1n)).toThrow(InvalidHashConfigError);
    expect(() => bigIntToHash64(1n << 64n)).toThrow(InvalidHashConfigError);
  });
});
