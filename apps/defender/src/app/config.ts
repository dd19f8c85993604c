import { z } from 'zod';
import { controllerEnvShape } from '@defender/controller';
import { clusterEnvShape, commonEnvShape, env, storeEnvShape } from '@defender/nest-common';

/** The defender's environment (see apps/defender/README.md). */
export const defenderEnvSchema = z.object({
  ...commonEnvShape(8080),
  ...clusterEnvShape(),
  ...storeEnvShape(),
  /** Kubernetes downward API. POD_UID identifies this process's stable-ID claim (random when unset). */
  POD_NAME: env.optionalString(),
  POD_UID: env.optionalString(),
  POD_NAMESPACE: env.optionalString(),
  /** Relative capacity announced in heartbeats for weighted assignment. */
  DEFENDER_CAPACITY: z.coerce.number({ message: 'must be a number' }).positive('must be > 0').max(1000).default(1),
  /** Longest a shutdown waits for in-flight runs before releasing the stable ID. */
  SHUTDOWN_DRAIN_TIMEOUT_SECONDS: env.seconds(25, 0, 600),
  /** The notification stream (`dc.<tool>.<chamber>.completed`). */
  NATS_STREAM_NAME: env.natsName('dc-notifications'),
  /** JetStream replicas of the streams when this process creates them. */
  NATS_STREAM_REPLICAS: env.int(1, 1, 5),
  /** How long notifications stay in the stream: long enough to replay any handoff or outage. */
  NOTIFICATION_RETENTION_SECONDS: env.int(7 * 86_400, 3600, 365 * 86_400),
  /** How long alarms, holds and dead letters stay in their streams. */
  EVENTS_RETENTION_SECONDS: env.int(30 * 86_400, 3600, 3650 * 86_400),
  /**
   * JetStream duplicate window of the streams (a publication with a message id seen this recently is
   * dropped). An optimisation only: exactly-once past it rests on the store (applied run ids, the
   * outbox's published-through mark; ADR 0006). Tests shorten it to outlast it.
   */
  STREAM_DUPLICATE_WINDOW_SECONDS: env.int(3600, 1, 86_400),
  /** Bound on one attempt at a run; it is then retried. */
  PROCESS_TIMEOUT_SECONDS: env.seconds(5, 0.1, 600),
  /** Attempts before a failing run goes to dc.dead.processing-failed (outages do not count). */
  PROCESS_MAX_ATTEMPTS: env.int(3, 1, 100),
  /** Runs processed at once across chambers (one chamber's runs never in parallel). */
  MAX_CONCURRENT_MESSAGES: env.int(10, 1, 1000),
  /**
   * Bound on the trace bytes held by runs in flight (a 3.6 M-sample f64 trace is ~29 MB): a run
   * waits for room before reading its trace; one bigger than the budget runs alone. 32 MB: the
   * RSS <= 300 MB budget with the default cache (README: memory).
   */
  TRACE_MEMORY_MB: env.int(32, 1, 65_536),
  /**
   * Runs at once that read a chamber's whole history (a Phase I fit, a baseline extension): the
   * largest transient of a run (every baseline point of 30+ runs decoded, the fit's matrices, the
   * model's JSON). V8 keeps the pages of its heap's peak resident after a collection (its page pool),
   * so fits running side by side set a defender's RSS for good (ADR 0014).
   */
  MAX_CONCURRENT_FITS: env.int(1, 1, 1000),
  /**
   * Seconds between returns of the C heap's free pages to the kernel (glibc malloc_trim; 0: never).
   * glibc keeps memory freed between live blocks resident. A trim costs a few milliseconds.
   */
  MALLOC_TRIM_INTERVAL_SECONDS: env.seconds(5, 0, 3600),
  /** Budget of the in-memory U-chart history cache. */
  CACHE_SIZE_MB: env.int(100, 1, 65_536),
  /** Largest trace accepted, in samples over all SVIDs; bigger ones are dead-lettered. */
  MAX_TRACE_POINTS: env.int(20_000_000, 1000, 1_000_000_000),
  /** An idle chamber looks at the stream at least this often (notices normally wake it at once). */
  IDLE_POLL_SECONDS: env.seconds(30, 0.1, 3600),
  /**
   * The seeds' embedded mode: this defender also runs the assignment controller (campaigning with
   * the other defenders; routes under /controller/api/v1). Never together with a standalone
   * assignment-controller deployment against the same cluster. The controller's variables
   * (ELECTION_*, COLD_START_WINDOW_SECONDS, ...) apply when it is on.
   */
  ASSIGNMENT_CONTROLLER_ENABLED: env.bool(false),
  ...controllerEnvShape(),
  /** Bearer token for POST /debug/cpu-profile; unset disables it. */
  DEBUG_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
});

export type DefenderConfig = z.infer<typeof defenderEnvSchema>;
