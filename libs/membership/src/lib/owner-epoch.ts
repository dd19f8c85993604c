/** Bits of the epoch given to the stable-ID claim generation. */
export const GENERATION_BITS = 21;
const GENERATION_SPAN = 2 ** GENERATION_BITS;
/** Largest map version that keeps the epoch a safe integer (2^32 - 1). */
export const MAX_EPOCH_MAP_VERSION = 2 ** 32 - 1;

/**
 * The owner epoch a defender writes a chamber's results with (the store's fencing token):
 * `mapVersion * 2^21 + generation`.
 *
 * - A newer map version always wins: the owner named by a later map fences every earlier owner.
 * - At the same map version, the later holder of one stable ID (a process that took over a frozen
 *   predecessor's ID, with a higher claim generation) fences the earlier one.
 *
 * @throws RangeError when an input is outside its range (version 1..2^32-1, generation 0..2^21-1).
 */
export function ownerEpoch(mapVersion: number, generation: number): number {
  if (!Number.isInteger(mapVersion) || mapVersion < 1 || mapVersion > MAX_EPOCH_MAP_VERSION) {
    throw new RangeError(`map version must be an integer in 1..${MAX_EPOCH_MAP_VERSION}, got ${mapVersion}`);
  }
  if (!Number.isInteger(generation) || generation < 0 || generation >= GENERATION_SPAN) {
    throw new RangeError(`claim generation must be an integer in 0..${GENERATION_SPAN - 1}, got ${generation}`);
  }
  return mapVersion * GENERATION_SPAN + generation;
}
