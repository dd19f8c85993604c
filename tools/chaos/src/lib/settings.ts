/**
 * The cluster's timing settings. Scenarios run with {@link SHORT_SETTINGS} so that each takes
 * seconds; reports scale the measured times to {@link DEFAULT_SETTINGS} (the apps' and k8s
 * defaults), against which design.md section 5 states its targets.
 */
export interface ClusterSettings {
  /** HEARTBEAT_INTERVAL_SECONDS: a defender is dead after 3 missed ones. */
  readonly heartbeatSeconds: number;
  /** COLD_START_WINDOW_SECONDS (also after a detected restart). */
  readonly coldStartWindowSeconds: number;
  /** SCALE_WINDOW_SECONDS (planned scale: joins and graceful leaves). */
  readonly scaleWindowSeconds: number;
  /** MAX_BATCH_WAIT_SECONDS. */
  readonly maxBatchWaitSeconds: number;
  /** ELECTION_TTL_SECONDS (controller lease). */
  readonly electionTtlSeconds: number;
  /** ELECTION_CLOCK_SKEW_MS of the agents. */
  readonly electionClockSkewMs: number;
}

/** The production defaults (k8s/base/config, apps' config schemas). */
export const DEFAULT_SETTINGS: ClusterSettings = {
  heartbeatSeconds: 2,
  coldStartWindowSeconds: 30,
  scaleWindowSeconds: 10,
  maxBatchWaitSeconds: 60,
  electionTtlSeconds: 4,
  electionClockSkewMs: 500,
};

/** Shortened intervals of the chaos runs (heartbeat 0.5 s, windows 1.5-2 s, election TTL 2 s). */
export const SHORT_SETTINGS: ClusterSettings = {
  heartbeatSeconds: 0.5,
  coldStartWindowSeconds: 1.5,
  scaleWindowSeconds: 2,
  maxBatchWaitSeconds: 10,
  electionTtlSeconds: 2,
  electionClockSkewMs: 200,
};

/** Missed heartbeats after which a defender is judged dead (design.md section 4). */
export const MISSED_HEARTBEATS = 3;

/** Detection time of a crash: 3 missed heartbeats. */
export function detectionSeconds(s: ClusterSettings): number {
  return MISSED_HEARTBEATS * s.heartbeatSeconds;
}

/**
 * The targets of design.md section 5 expressed for settings `s`, in seconds. At the defaults they
 * are the design's numbers; at shortened intervals each target keeps its fixed allowance (the "+ 2 s")
 * and scales the interval-bound part.
 */
export interface Targets {
  /** Crash -> chambers running again: detection + 2 s (p99 <= 8 s at defaults). */
  readonly crashResumeSeconds: number;
  /** Leader failover: p99 <= 6 s at defaults, scaled by the election TTL. */
  readonly failoverSeconds: number;
  /** Cold start: one publication within the cold-start window + 2 s of the last join. */
  readonly coldStartSeconds: number;
}

export function targetsFor(s: ClusterSettings): Targets {
  return {
    crashResumeSeconds: detectionSeconds(s) + 2,
    failoverSeconds: 6 * (s.electionTtlSeconds / DEFAULT_SETTINGS.electionTtlSeconds),
    coldStartSeconds: s.coldStartWindowSeconds + 2,
  };
}

/**
 * Upper bound of a leader failover from the election mechanics: the standby waits for the dead
 * leader's lease to end (renewed every TTL/2, so up to a full TTL after the kill), plus the agents'
 * clock-skew margin, plus one controller tick to take over the map.
 */
export function failoverBoundSeconds(s: ClusterSettings): number {
  return s.electionTtlSeconds + s.electionClockSkewMs / 1000 + s.heartbeatSeconds;
}
