/**
 * `@defender/contracts/stable-id`: what the defender's heartbeat thread needs of the contracts (a
 * stable-ID claim and the error of a bad record), without zod or any schema of the main entry
 * point, which would cost that thread's V8 heap about 11 MB (ADR 0014).
 */
export { InvalidMessageError } from './lib/cluster/invalid-message';
export { DEFENDER_ID_PATTERN, MAX_CLAIM_GENERATION, defenderIdOf, parseStableIdClaim, type StableIdClaim } from './lib/cluster/stable-id';
