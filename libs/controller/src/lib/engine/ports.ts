import type { AssignmentMap } from '@defender/contracts';
import type { ChamberInput } from '@defender/assignment';
import type { ObservedHeartbeat, StoredMap } from '@defender/nats-kv';

/** Where the engine reads and writes the map (AssignmentMapBucket in production). */
export interface MapPort {
  read(): Promise<StoredMap | null>;
  lastRevision(): Promise<number>;
  publish(map: AssignmentMap, expectedRevision: number | null): Promise<number>;
}

/** The heartbeat bucket (HeartbeatBucket in production). */
export interface HeartbeatPort {
  readAll(): Promise<{ heartbeats: ObservedHeartbeat[]; bad: { key: string; reason: string }[] }>;
}

/** The chambers to assign and their weights (chamber_metadata from the store). */
export interface ChamberSource {
  list(): Promise<ChamberInput[]>;
}

/** The leader's term as the engine needs it. */
export interface TermPort {
  readonly fencingToken: string;
  /** True while the term is held; checked right before every publication. */
  isLeader(): boolean;
}
