import type { Logger } from '@nestjs/common';
import { strategyScopeKind } from '@defender/contracts';
import type { ProcessingEvents } from '@defender/pipeline';
import type { UChartCacheStats } from '@defender/store';
import type { DefenderMetricsObserver } from '../metrics/defender-metrics-observer';

const message = (err: unknown): string | undefined => (err as Error | undefined)?.message;

/** The processing's events as the defender reports them: JSON logs and metrics. */
export function processingEvents(logger: Logger, metrics: DefenderMetricsObserver, stream: string): ProcessingEvents<UChartCacheStats> {
  return {
    runs: {
      received: (inflight) => metrics.runReceived(inflight),
      processed: (chamber, sequence, ms, outcome, inflight, cache) => {
        metrics.runProcessed(chamber, outcome, ms / 1000, inflight);
        if (cache) metrics.cacheCounts(cache);
        if (outcome === 'duplicate-run') logger.debug({ msg: 'run id applied before: notification skipped', chamber, sequence, outcome });
        else logger.debug({ msg: 'run applied', chamber, sequence, ms: Math.round(ms), outcome });
      },
      strategyFound: (chamber, scope, warnDeprecated) => {
        metrics.strategyLookup(strategyScopeKind(scope));
        if (warnDeprecated && scope) {
          logger.warn({
            msg: `strategy read from the deprecated key "${scope.scope}": store it under "chamber/${scope.scope}" (defenderctl strategy put), which takes precedence; warned once per chamber`,
            chamber,
          });
        }
      },
      deadLettered: (chamber, sequence, reason, detail) => {
        metrics.deadLetter(reason);
        logger.warn({ msg: 'dead-lettered', chamber, sequence, reason, detail });
      },
      failedAttempt: (chamber, sequence, attempt, err) => {
        metrics.attemptFailed();
        logger.warn({ msg: 'run attempt failed', chamber, sequence, attempt, err: message(err) });
      },
      paused: (chamber, what, err) => {
        metrics.processingPaused(what);
        logger.warn({ msg: 'paused: dependency unavailable', chamber, stage: what, err: message(err) });
      },
      releaseFailed: (chamber, err) => logger.warn({ msg: 'trace memory not released: left to the garbage collector', chamber, err: message(err) }),
      fenced: (chamber, epoch, err) => {
        metrics.writeFenced();
        logger.warn({ msg: 'fenced: a newer owner holds the chamber', chamber, epoch, err: message(err) });
      },
      streamAdopted: (chamber, info) =>
        logger.warn({ msg: 'high-water mark recorded without a stream identity (before migration 3): adopted the current stream, once', chamber, ...info }),
      streamMismatch: (chamber, info, paused) => {
        metrics.streamMismatch(chamber, paused);
        logger.error({
          msg:
            'notification stream is not the one this chamber\'s high-water mark counts in (recreated: sequences restarted below the mark); ' +
            'chamber paused, nothing committed; re-basing it onto the new stream (run ids applied before are skipped). If it stays paused, check the store and NATS',
          chamber,
          ...info,
        });
      },
      streamRebased: (chamber, info, paused) => {
        metrics.streamMismatchCleared(chamber, paused);
        metrics.streamRebased();
        logger.warn({ msg: 'chamber re-based onto the recreated notification stream: reading it from its start', chamber, ...info });
      },
      mismatchForgotten: (chamber, paused) => metrics.streamMismatchCleared(chamber, paused),
      published: (chamber, event) => {
        if (!event.subject.startsWith('defense.alarms.')) return;
        metrics.alarmPublished(chamber);
      },
      stage: (stage, ms) => {
        if (stage === 'evaluate') metrics.evaluated(ms / 1000);
      },
    },
    streamCheck: {
      status: (missing) => metrics.streamMissing(missing),
      missing: () => logger.error({ msg: 'notification stream missing (NATS lost its store?): processing paused; creating it again', stream }),
      back: () => logger.warn({ msg: 'notification stream exists again', stream }),
      streamsCreated: (ok, err) =>
        ok ? logger.warn({ msg: 'streams created again', stream }) : logger.warn({ msg: 'could not create the streams again; retrying', err: message(err) }),
      recreated: (was, now) =>
        logger.error({ msg: 'notification stream recreated: its sequences restarted; every chamber re-checks its mark before its next commit', stream, was, now }),
      recreateIncomplete: (err) => logger.warn({ msg: 'could not create the other streams again; next check retries', err: message(err) }),
      checkFailed: (err) => logger.debug({ msg: 'notification stream check failed', err: message(err) }),
    },
    feed: {
      failed: (err) => logger.warn({ msg: 'notification feed failed', err: err.message }),
      ended: () => logger.warn({ msg: 'notification feed ended; re-watching' }),
      rewatchFailed: (attempt, err) => logger.warn({ msg: 'could not re-watch notifications; retrying', attempt, err: message(err) }),
      stopFailed: (err) => logger.warn({ msg: 'could not stop the notification feed', err: message(err) }),
    },
    supervisor: {
      workerCrashed: (chamber, err, delayMs) => logger.error({ msg: 'chamber worker crashed; restarting', chamber, delayMs, err: message(err) }),
      restartedAfterFence: (chamber, fencedEpoch, epoch) =>
        logger.warn({ msg: 'worker fenced under an older map than the one that gives us the chamber: started again under it', chamber, fencedEpoch, epoch }),
      orphansStarted: (mapVersion, chambers) =>
        logger.warn({ msg: 'owned chambers without a worker (fenced under an older map): started under this map', mapVersion, chambers: chambers.slice(0, 20), count: chambers.length }),
    },
    unknownChambers: {
      deadLettered: (chamber, sequence) => {
        metrics.deadLetter('unknown-chamber');
        logger.warn({ msg: 'dead-lettered', chamber, sequence, reason: 'unknown-chamber' });
      },
      failed: (chamber, sequence, err) => logger.warn({ msg: 'could not dead-letter an unknown chamber', chamber, sequence, err: message(err) }),
    },
    setupRetrying: (attempt, delayMs, err) => logger.warn({ msg: 'processing not ready yet; retrying', attempt, delayMs: Math.round(delayMs), err: message(err) }),
    ready: (maxConcurrent) => logger.log({ msg: 'processing ready', maxConcurrent }),
    setupFailed: (err) => logger.error({ msg: 'processing could not start', err: message(err) }),
    drainTimedOut: (timeoutMs) => logger.warn({ msg: 'drain timed out; in-flight runs are left to the next owner (fenced)', timeoutMs }),
  };
}
