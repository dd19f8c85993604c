import fc from 'fast-check';
import { bigIntToHash64, fmix64, hash64ToBigInt, pairToUnitInterval } from '../index';

const M64 = (1n << 64n) - 1n;

function referenceFmix64(k: bigint): bigint {
  k ^= k >> 33n;
  k = (k * 0xff51afd7ed558ccdn) & M64;
  k ^= k >> 33n;
  k = (k * 0xc4ceb9fe1a85ec53n) & M64;
  return k ^ (k >> 33n);
}

describe('fmix64', () => {
  it('matches a BigInt implementation of MurmurHash3 fmix64', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: M64 }), (v) => {
        expect(hash64ToBigInt(fmix64(bigIntToHash64(v)))).toBe(referenceFmix64(v));
      }),
      { seed: 2001, numRuns: 2000 },
    );
  });

  it('handles the extremes', () => {
    for (const v of [0n, 1n, M64, 1n << 63n, 0xffffffffn, 1n << 32n]) {
      expect(hash64ToBigInt(fmix64(bigIntToHash64(v)))).toBe(referenceFmix64(v));
    }
  });
});

/** Inverse of fmix64 (xorshift by 33 is an involution on 64 bits; the multipliers are odd). */
function inverseFmix64(k: bigint): bigint {
  const inv = (a: bigint) => {
    let x = a; // Newton iteration for the inverse mod 2^64: each step doubles the correct bits.
    for (let i = 0; i < 6; i++) x = (x * (2n - a * x)) & M64;
    return x;
  };
  k ^= k >> 33n;
  k = (k * inv(0xc4ceb9fe1a85ec53n)) & M64;
  k ^= k >> 33n;
  k = (k * inv(0xff51afd7ed558ccdn)) & M64;
  return k ^ (k >> 33n);
}

describe('pairToUnitInterval', () => {
  it('maps the largest and smallest mixed values strictly inside (0, 1)', () => {
    const top = bigIntToHash64(inverseFmix64(M64));
    expect(referenceFmix64(inverseFmix64(M64))).toBe(M64);
    const uMax = pairToUnitInterval(top.hi, top.lo, 0, 0);
    expect(uMax).toBeLessThan(1);
    expect(uMax).toBe(1 - 2 ** -53);
    const uMin = pairToUnitInterval(9, 9, 9, 9);
    expect(uMin).toBe(2 ** -53);
  });

  it('stays strictly inside (0, 1), including for the extreme mixed values', () => {
    // fmix64 is a bijection with fmix64(0) = 0, so (a XOR b) = 0 yields the smallest possible u.
    expect(pairToUnitInterval(5, 7, 5, 7)).toBeGreaterThan(0);
    fc.assert(
      fc.property(fc.nat(), fc.nat(), fc.nat(), fc.nat(), (a, b, c, d) => {
        const u = pairToUnitInterval(a >>> 0, b >>> 0, c >>> 0, d >>> 0);
        expect(u).toBeGreaterThan(0);
        expect(u).toBeLessThan(1);
        expect(Number.isFinite(Math.log(u))).toBe(true);
      }),
      { seed: 2002 },
    );
  });
});
