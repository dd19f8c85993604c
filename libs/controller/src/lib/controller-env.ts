import { z } from 'zod';
import { electionClientEnvShape } from '@defender/election';
import { env } from '@defender/nest-common';

/**
 * Variables of the assignment controller (standalone app, or embedded in a defender). Spread with
 * `commonEnvShape`, `clusterEnvShape` and `storeEnvShape` from @defender/nest-common.
 */
export function controllerEnvShape() {
  return {
    ...electionClientEnvShape(),
    /** Name of the election the controllers campaign in. */
    ELECTION_NAME: env.natsName('assignment-controller'),
    /** Batch window for joins while the cluster cold-starts (or restarts). */
    COLD_START_WINDOW_SECONDS: env.seconds(30, 0.1, 3600),
    /** Batch window for planned scale (joins and graceful leaves). */
    SCALE_WINDOW_SECONDS: env.seconds(10, 0.1, 3600),
    /** Longest a batch waits from its first change, however often it is extended. */
    MAX_BATCH_WAIT_SECONDS: env.seconds(60, 0.1, 7200),
    /** `sticky-balanced` (default: minimal movement, max/avg <= 1 + threshold) or `seed-two-phase` (the seeds' baseline). */
    ASSIGNMENT_STRATEGY: z
      .enum(['sticky-balanced', 'seed-two-phase'], { message: 'must be sticky-balanced or seed-two-phase' })
      .default('sticky-balanced'),
    /** Balance band half-width: every defender within (1 +- threshold) x its share where chamber sizes allow. */
    WEIGHT_REBALANCE_THRESHOLD: z.coerce.number({ message: 'must be a number' }).min(0).max(0.99).default(0.05),
    /** A chamber moved by a voluntary rebalance is not moved voluntarily again within this time. */
    REBALANCE_COOLDOWN_SECONDS: env.seconds(0, 0, 86_400),
    /**
     * What the engine balances (ADR 0008): `load`, expected CPU per hour from the defenders'
     * measured run rates and costs (default), or `samples`, samples per run as in the seeds.
     */
    ASSIGNMENT_BALANCE_BY: z.enum(['load', 'samples'], { message: 'must be load or samples' }).default('load'),
    /** Load drift band: a load rebalance is considered only while a defender is outside (1 +- band) x its target. */
    LOAD_DRIFT_BAND: z.coerce.number({ message: 'must be a number' }).gt(0).max(0.99).default(0.1),
    /** ... continuously for this long. */
    LOAD_DRIFT_SUSTAIN_SECONDS: env.seconds(300, 0, 86_400),
    /** At least this long between two load rebalances (and after any balance map). */
    LOAD_REBALANCE_COOLDOWN_SECONDS: env.seconds(600, 0, 86_400),
    /** After a crash's orphans-only map: stable this long, then one balance pass if outside the band. */
    POST_CRASH_SETTLE_SECONDS: env.seconds(30, 0, 3600),
    /** Cap on chambers per defender (0: none). */
    MAX_CHAMBERS_PER_DEFENDER: env.int(0, 0, 1_000_000),
    /** Virtual nodes per defender on the hash ring (seed-two-phase). */
    ASSIGNMENT_VNODE_COUNT: env.int(200, 150, 500),
    /** How often the leader recomputes chamber weights from observed runs (chamber_metadata). */
    WEIGHT_UPDATE_INTERVAL_SECONDS: env.seconds(86_400, 1, 30 * 86_400),
    /** How often the chamber list and weights are re-read from the store. */
    WEIGHT_CACHE_TTL_SECONDS: env.seconds(3600, 1, 86_400),
  };
}

/** Validates just the controller's own variables (tests, tools). */
export const controllerOnlyEnvSchema = z.object(controllerEnvShape());

/** What the controller module needs: its own variables plus the shared ones it reads. */
export type ControllerSettings = z.infer<typeof controllerOnlyEnvSchema> & {
  HEARTBEAT_INTERVAL_SECONDS: number;
  POD_NAME?: string;
};
