export { EmptyRingError, InvalidHashConfigError } from './lib/errors';
export {
  type Hash64,
  bigIntToHash64,
  compareHash64,
  hash64ToBigInt,
  xxh64,
  xxh64Digest,
  xxh64Hash64,
  xxh64Hex,
} from './lib/xxhash64';
export { fmix64, pairToUnitInterval } from './lib/mix64';
export { normalDeviate, seededRandom, type UniformRandom } from './lib/random';
export {
  DEFAULT_VNODES,
  HashRing,
  type HashRingOptions,
  MAX_VNODES,
  MIN_VNODES,
  type RingChange,
} from './lib/hash-ring';
export { RendezvousHasher, type WeightedNode, rendezvousScore } from './lib/rendezvous';
