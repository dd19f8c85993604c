import type { Logger } from '@nestjs/common';
import type { MembershipEvents } from '@defender/membership';
import type { HealthRegistry } from '@defender/nest-common';
import type { DefenderMetricsObserver } from '../metrics/defender-metrics-observer';
import type { DefenderIdentity } from './defender-identity';

/** Where membership's events go. */
export interface MembershipEventSinks {
  readonly logger: Logger;
  readonly metrics: DefenderMetricsObserver;
  readonly health: HealthRegistry;
  /** Who we are and which map we hold, for processing. */
  readonly identity: DefenderIdentity;
  /** The owner ID of this process's claim, for the claim's log line. */
  readonly ownerId: string;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Membership's events as the defender reports them: JSON logs, metrics, health checks and the identity processing reads. */
export function membershipEvents({ logger, metrics, health, identity, ownerId }: MembershipEventSinks): MembershipEvents {
  return {
    state: (from, to, code, secondsIn) => {
      metrics.stateCode(code);
      if (secondsIn !== undefined) metrics.transition(from, to, secondsIn);
    },
    retrying: (what, attempt, delayMs, err) => logger.warn({ msg: `${what}: NATS unavailable, retrying`, attempt, delayMs, err: message(err) }),
    openFailed: () => metrics.initializationFailed(),
    claimAttempt: () => metrics.claimAttempt(),
    poolFull: (waitMs) => logger.warn({ msg: 'stable-ID pool full; waiting for a stale claim', waitMs }),
    claimed: (claim) => {
      identity.set(claim.defenderId, claim.generation);
      metrics.stableId(claim.n);
      metrics.claimed(claim.defenderId, true);
      health.set('stable-id', true, claim.defenderId);
      logger.log({ msg: 'claimed stable ID', defenderId: claim.defenderId, how: claim.how, ownerId });
    },
    heartbeatFailed: (defenderId, err) => {
      metrics.heartbeatFailed();
      logger.warn({ msg: 'heartbeat failed', defenderId, err });
    },
    heartbeatWithheld: (defenderId, silentMs, hangAfterMs) =>
      logger.warn({ msg: 'event loop silent past the hang limit: heartbeats were withheld', defenderId, silentMs, hangAfterMs }),
    bucketsChecked: (created, defenderId, err) => {
      if (err !== undefined) logger.warn({ msg: 'could not check the KV buckets', err: message(err) });
      else if (created.length > 0) logger.error({ msg: 'KV buckets were missing (NATS lost its store?): created again', buckets: created, defenderId });
    },
    rewatch: (why) => logger.warn({ msg: 'watching the assignment map again: only a newer map is applied', why }),
    watchFailed: (err) => logger.warn({ msg: 'assignment watch failed; re-watching', err: message(err) }),
    mapRejected: (revision, reason) => {
      metrics.mapRejected();
      logger.warn({ msg: 'assignment map ignored', revision, reason });
    },
    applyFailed: (version, err) => {
      metrics.assignmentFailed();
      logger.error({ msg: 'applying the assignment map failed', version, err: message(err) });
    },
    applied: (a) => {
      const map = a.stored.map;
      identity.setMap(a.mapChambers, a.lowestDefender);
      metrics.assignmentApplied({ version: map.version, added: a.added, removed: a.removed, owned: a.owned.length, seconds: a.seconds });
      health.set('assignment', true, `map v${map.version}`);
      logger.log({
        msg: 'assignment applied',
        defenderId: a.defenderId,
        version: map.version,
        revision: a.stored.revision,
        chambers: a.owned.length,
        mapScope: a.stored.owner === undefined ? 'whole' : 'own chunks',
        added: a.added,
        removed: a.removed,
        clusterState: map.state,
      });
    },
    shutdownBegan: (inflight) => metrics.shutdownBegan(inflight),
    released: (defenderId, left, from, err) => {
      if (left) {
        metrics.claimed(defenderId, false);
        logger.log({ msg: 'released stable ID', defenderId, from });
      } else {
        // The claim then goes stale and is taken over after 3 intervals: slower, still correct.
        logger.warn({ msg: 'could not release stable ID on shutdown', defenderId, err });
      }
    },
    shutdownEnded: async (seconds, defenderId, from) => {
      const counts = await metrics.shutdownEnded(seconds);
      logger.log({ msg: 'shutdown complete', defenderId, from, metrics: counts });
    },
  };
}
