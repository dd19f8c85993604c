import type { Hash64 } from './xxhash64';

// Scratch registers for the 64-bit multiply: the mixers run per (key, node) pair in rendezvous
// scoring, so they avoid allocating a result object per call.
let outHi = 0;
let outLo = 0;

/** (ah:al) * (bh:bl) mod 2^64, all halves unsigned 32-bit; result in outHi:outLo. */
function mul64(ah: number, al: number, bh: number, bl: number): void {
  const a0 = al & 0xffff;
  const a1 = al >>> 16;
  const b0 = bl & 0xffff;
  const b1 = bl >>> 16;
  // Each partial product is below 2^32, so it is exact in a double.
  const p00 = a0 * b0;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const p11 = a1 * b1;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  outLo = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
  const carry = p11 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16);
  outHi = (carry + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}

// MurmurHash3 fmix64 constants, split into halves.
const C1_HI = 0xff51afd7;
const C1_LO = 0xed558ccd;
const C2_HI = 0xc4ceb9fe;
const C2_LO = 0x1a85ec53;

function fmix64Into(hi: number, lo: number): void {
  lo = (lo ^ (hi >>> 1)) >>> 0;
  mul64(hi, lo, C1_HI, C1_LO);
  hi = outHi;
  lo = (outLo ^ (outHi >>> 1)) >>> 0;
  mul64(hi, lo, C2_HI, C2_LO);
  hi = outHi;
  lo = (outLo ^ (outHi >>> 1)) >>> 0;
  outHi = hi;
  outLo = lo;
}

/**
 * MurmurHash3's 64-bit finalizer (`fmix64`), a bijective avalanche mixer, computed on uint32 halves.
 * Used to derive an independent, uniformly distributed value per (key, node) pair from two cached
 * xxHash64 values, instead of one native hash call per pair.
 */
export function fmix64(h: Hash64): Hash64 {
  fmix64Into(h.hi >>> 0, h.lo >>> 0);
  return { hi: outHi, lo: outLo };
}

const TWO_POW_20 = 2 ** 20;
const TWO_POW_52 = 2 ** 52;

/**
 * Maps the pair (a XOR b) through {@link fmix64} to a real number strictly inside (0, 1) from the top
 * 52 bits m of the mixed value: u = (m + 0.5) / 2^52, which is exact in a double (with 53 bits,
 * m + 0.5 would round up to 2^53 and give u = 1). Never returns 0 or 1, so `Math.log(u)` is finite
 * and negative.
 */
export function pairToUnitInterval(aHi: number, aLo: number, bHi: number, bLo: number): number {
  fmix64Into((aHi ^ bHi) >>> 0, (aLo ^ bLo) >>> 0);
  return (outHi * TWO_POW_20 + (outLo >>> 12) + 0.5) / TWO_POW_52;
}
