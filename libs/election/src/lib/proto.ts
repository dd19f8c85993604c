import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Options as ProtoLoaderOptions } from '@grpc/proto-loader';
import { LeaderView, LeaseState } from './lease';
import {
  CampaignRequest,
  campaignRequestSchema,
  ElectionRequest,
  electionRequestSchema,
  leaseKeySchema,
  LeaseRequest,
  leaseRequestSchema,
  parseRequest,
} from './validation';

/** The proto file, relative to its include root. */
export const ELECTION_PROTO_FILE = 'election/v1/election.proto';
/** Fully qualified names. */
export const ELECTION_PACKAGE = 'election.v1';
export const ELECTION_SERVICE = 'Election';

/**
 * How both sides load the proto: field names as written (snake_case), 64-bit integers and enums as
 * JS numbers (tokens and epoch milliseconds stay below 2^53), defaults for absent fields.
 */
export const PROTO_LOADER_OPTIONS: ProtoLoaderOptions = {
  keepCase: true,
  longs: Number,
  enums: Number,
  defaults: true,
  oneofs: true,
};

/** The include root in the source tree (`libs/election/proto`). */
export function sourceProtoRoot(): string {
  return join(__dirname, '..', '..', 'proto');
}

/**
 * The first directory of `roots` that holds {@link ELECTION_PROTO_FILE}, else the source tree's.
 * A bundled app passes its copied assets first (e.g. `join(__dirname, 'proto')`).
 * @throws Error naming every place looked at when none has it.
 */
export function resolveProtoRoot(roots: readonly string[] = []): string {
  const candidates = [...roots, sourceProtoRoot()];
  const found = candidates.find((r) => existsSync(join(r, ELECTION_PROTO_FILE)));
  if (found === undefined) throw new Error(`${ELECTION_PROTO_FILE} not found under ${candidates.join(', ')}`);
  return found;
}

/** LeaseState on the wire (enum election.v1.LeaseState). */
export const WIRE_LEASE_STATE: Readonly<Record<LeaseState, number>> = {
  none: 1,
  held: 2,
  expired: 3,
  released: 4,
};

const STATE_BY_WIRE = new Map<number, LeaseState>(
  Object.entries(WIRE_LEASE_STATE).map(([k, v]) => [v, k as LeaseState]),
);

/** Wire shapes (proto field names; see libs/election/proto/election/v1/election.proto). */
export interface CampaignRequestWire {
  election: string;
  candidate: string;
  ttl_ms: number;
  min_token?: number;
  /** The candidate's secret for the term (proto3: '' when absent). */
  lease_key?: string;
}
export interface LeaseRequestWire {
  election: string;
  candidate: string;
  fencing_token: number;
  lease_key?: string;
}
export interface ElectionRequestWire {
  election: string;
}
export interface LeaseResponseWire {
  election: string;
  leader: string;
  is_leader: boolean;
  fencing_token: number;
  acquired_at_ms: number;
  lease_expires_at_ms: number;
  ttl_ms: number;
  agent_time_ms: number;
  retry_after_ms: number;
  state: number;
}
export interface LeaderStateWire {
  election: string;
  state: number;
  leader: string;
  fencing_token: number;
  acquired_at_ms: number;
  lease_expires_at_ms: number;
  agent_time_ms: number;
  revision: number;
}
export interface ReleaseResponseWire {
  released: boolean;
  leader: LeaderStateWire;
}

/** A Campaign or Renew answer as the client library sees it. */
export interface LeaseInfo {
  readonly election: string;
  /** Holder now; null when vacant. */
  readonly leader: string | null;
  readonly isLeader: boolean;
  readonly fencingToken: number;
  /** Agent clock, Unix ms. */
  readonly acquiredAtMs: number;
  /** Agent clock, Unix ms. */
  readonly leaseExpiresAtMs: number;
  readonly ttlMs: number;
  readonly agentTimeMs: number;
  readonly retryAfterMs: number;
  readonly state: LeaseState;
}

export function leaderStateToWire(v: LeaderView): LeaderStateWire {
  return {
    election: v.election,
    state: WIRE_LEASE_STATE[v.state],
    leader: v.leader ?? '',
    fencing_token: v.fencingToken,
    acquired_at_ms: v.acquiredAtMs,
    lease_expires_at_ms: v.leaseExpiresAtMs,
    agent_time_ms: v.agentTimeMs,
    revision: v.revision,
  };
}

export function leaderStateFromWire(w: LeaderStateWire): LeaderView {
  return {
    election: w.election,
    state: stateFromWire(w.state),
    leader: w.leader === '' ? null : w.leader,
    fencingToken: Number(w.fencing_token),
    acquiredAtMs: Number(w.acquired_at_ms),
    leaseExpiresAtMs: Number(w.lease_expires_at_ms),
    agentTimeMs: Number(w.agent_time_ms),
    revision: Number(w.revision),
  };
}

export function leaseInfoToWire(i: LeaseInfo): LeaseResponseWire {
  return {
    election: i.election,
    leader: i.leader ?? '',
    is_leader: i.isLeader,
    fencing_token: i.fencingToken,
    acquired_at_ms: i.acquiredAtMs,
    lease_expires_at_ms: i.leaseExpiresAtMs,
    ttl_ms: i.ttlMs,
    agent_time_ms: i.agentTimeMs,
    retry_after_ms: Math.min(0xffffffff, Math.max(0, Math.ceil(i.retryAfterMs))),
    state: WIRE_LEASE_STATE[i.state],
  };
}

export function leaseInfoFromWire(w: LeaseResponseWire): LeaseInfo {
  return {
    election: w.election,
    leader: w.leader === '' ? null : w.leader,
    isLeader: w.is_leader,
    fencingToken: Number(w.fencing_token),
    acquiredAtMs: Number(w.acquired_at_ms),
    leaseExpiresAtMs: Number(w.lease_expires_at_ms),
    ttlMs: Number(w.ttl_ms),
    agentTimeMs: Number(w.agent_time_ms),
    retryAfterMs: Number(w.retry_after_ms),
    state: stateFromWire(w.state),
  };
}

function stateFromWire(n: number): LeaseState {
  const s = STATE_BY_WIRE.get(Number(n));
  if (s === undefined) throw new Error(`unknown LeaseState ${n}`);
  return s;
}

const WIRE_FIELD_NAMES = { ttlMs: 'ttl_ms', fencingToken: 'fencing_token', minToken: 'min_token', leaseKey: 'lease_key' };

/**
 * Over the wire a lease key is required (issue 50): what GetLeader and Observe return (holder and
 * token) must not be enough to Renew or Release someone else's term.
 */
const wireCampaignSchema = campaignRequestSchema.extend({ leaseKey: leaseKeySchema });
const wireLeaseSchema = leaseRequestSchema.extend({ leaseKey: leaseKeySchema });

/**
 * Validates a Campaign request as decoded from the wire.
 * @throws InvalidRequestError naming every bad field by its proto name.
 */
export function campaignRequestFromWire(w: Partial<CampaignRequestWire> | undefined): CampaignRequest {
  return parseRequest(
    wireCampaignSchema,
    { election: w?.election, candidate: w?.candidate, ttlMs: wireNumber(w?.ttl_ms), minToken: wireNumber(w?.min_token), leaseKey: wireString(w?.lease_key) },
    WIRE_FIELD_NAMES,
  );
}

/** Validates a Renew or Release request. @throws InvalidRequestError */
export function leaseRequestFromWire(w: Partial<LeaseRequestWire> | undefined): LeaseRequest {
  return parseRequest(
    wireLeaseSchema,
    { election: w?.election, candidate: w?.candidate, fencingToken: wireNumber(w?.fencing_token), leaseKey: wireString(w?.lease_key) },
    WIRE_FIELD_NAMES,
  );
}

/** proto3 leaves a string empty when absent. */
function wireString(v: unknown): unknown {
  return v === '' || v === null ? undefined : v;
}

/** Validates a GetLeader or Observe request. @throws InvalidRequestError */
export function electionRequestFromWire(w: Partial<ElectionRequestWire> | undefined): ElectionRequest {
  return parseRequest(electionRequestSchema, { election: w?.election });
}

/** proto3 leaves a number at 0 when absent; loaders may hand 64-bit values over as strings. */
function wireNumber(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  const n = typeof v === 'number' ? v : Number(v);
  return n === 0 ? undefined : n;
}
