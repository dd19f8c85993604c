import type { NatsConnection } from '@nats-io/nats-core';
import { DiscardPolicy, JetStreamApiCodes, JetStreamApiError, jetstreamManager, RetentionPolicy, StorageType, StreamConfig } from '@nats-io/jetstream';
import { MAX_NOTIFICATION_BYTES } from '@defender/contracts';
import { mapKvError } from './errors';

/** Streams Defender uses; created or updated idempotently at start by every process that needs them. */
export const STREAMS = {
  /** Run-completion notifications, `dc.<tool>.<chamber>.completed` (design.md section 1). */
  notifications: 'dc-notifications',
  /** Dead letters, `dc.dead.<reason>` (reason a single token), deduplicated by message id. */
  deadLetters: 'dc-dead-letters',
  /** Alarms and holds, `defense.alarms.<tool>.<chamber>` / `defense.holds.<tool>.<chamber>`, deduplicated. */
  defenseEvents: 'defense-events',
} as const;

export interface StreamSettings {
  /** JetStream replicas (1 on one server, 3 in production). */
  replicas: number;
  /** How long notifications are kept, seconds: long enough to replay any handoff or outage. */
  notificationMaxAgeSeconds: number;
  /** How long alarms, holds and dead letters are kept, seconds. */
  eventsMaxAgeSeconds: number;
  /**
   * Window in which a publication with a message id already seen is dropped, seconds (at most each
   * stream's max age). An optimisation: exactly-once past it rests on the store (ADR 0006).
   */
  duplicateWindowSeconds: number;
}

export const DEFAULT_STREAM_SETTINGS: StreamSettings = {
  replicas: 1,
  notificationMaxAgeSeconds: 7 * 86_400,
  eventsMaxAgeSeconds: 30 * 86_400,
  duplicateWindowSeconds: 3600,
};

const NS = 1_000_000_000;

/**
 * Server-side `max_msg_size` of the event streams, from the bound of what they carry
 * (docs/architecture.md, "How large each value and message can get"):
 * - a dead letter is at most ~93 KB (payload cut at 64 KiB, base64; detail at 4,096 characters);
 * - a run alarm lists at most 100 violations in at most 64 KiB (71 KB measured with 5,000 violations
 *   and every name at its limit; its details are validated at 1 MiB by the store), a hold < 2 KB: the
 *   stream takes NATS's default `max_payload`, far above both.
 */
export const STREAM_MESSAGE_LIMITS = {
  deadLetters: 128 * 1024,
  defenseEvents: 1024 * 1024,
} as const;

/** The three stream configurations for `settings`. */
export function streamConfigs(settings: StreamSettings): (Partial<StreamConfig> & { name: string })[] {
  const common = { storage: StorageType.File, retention: RetentionPolicy.Limits, num_replicas: settings.replicas, discard: DiscardPolicy.Old };
  return [
    {
      ...common,
      name: STREAMS.notifications,
      // A chamber's runs and its equipment events (ADR 0019), read in stream order by its worker.
      subjects: ['dc.*.*.completed', 'dc.*.*.event'],
      max_age: settings.notificationMaxAgeSeconds * NS,
      // Readers fetch a chamber's next run by subject from a sequence (direct get, next_by_subj).
      allow_direct: true,
      // A notification is small; a huge one is refused at publication (and its dead letter stays bounded).
      max_msg_size: MAX_NOTIFICATION_BYTES,
      duplicate_window: Math.min(settings.duplicateWindowSeconds, settings.notificationMaxAgeSeconds) * NS,
    },
    {
      ...common,
      name: STREAMS.deadLetters,
      // One token after dead: 'dc.dead.>' would overlap 'dc.*.*.completed' (dc.dead.x.completed).
      subjects: ['dc.dead.*'],
      max_age: settings.eventsMaxAgeSeconds * NS,
      max_msg_size: STREAM_MESSAGE_LIMITS.deadLetters,
      duplicate_window: Math.min(settings.duplicateWindowSeconds, settings.eventsMaxAgeSeconds) * NS,
    },
    {
      ...common,
      name: STREAMS.defenseEvents,
      subjects: ['defense.alarms.>', 'defense.holds.>'],
      max_age: settings.eventsMaxAgeSeconds * NS,
      max_msg_size: STREAM_MESSAGE_LIMITS.defenseEvents,
      duplicate_window: Math.min(settings.duplicateWindowSeconds, settings.eventsMaxAgeSeconds) * NS,
    },
  ];
}

/**
 * Creates the streams, or updates their mutable settings when they exist. Safe when many processes
 * start at once: a lost creation race falls back to an update.
 */
export async function ensureStreams(nc: NatsConnection, settings: StreamSettings = DEFAULT_STREAM_SETTINGS): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const cfg of streamConfigs(settings)) {
    const name = cfg.name;
    try {
      await jsm.streams.info(name);
      await jsm.streams.update(name, cfg);
    } catch (err) {
      if (!(err instanceof JetStreamApiError) || err.code !== JetStreamApiCodes.StreamNotFound) {
        throw mapKvError(err, name, '(stream)');
      }
      try {
        await jsm.streams.add(cfg);
      } catch (addErr) {
        // Another process created it between our info and add: converge by updating.
        if (addErr instanceof JetStreamApiError && addErr.code === 10058 /* name in use */) {
          await jsm.streams.update(name, cfg);
        } else {
          throw mapKvError(addErr, name, '(stream)');
        }
      }
    }
  }
}
