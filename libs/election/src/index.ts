export {
  ContentionError,
  CorruptLeaseRecordError,
  ElectionCallError,
  ElectionError,
  InvalidRequestError,
  LeaseStoreUnavailableError,
  RevisionConflictError,
} from './lib/errors';
export type { FieldProblem } from './lib/errors';
export {
  MAX_MIN_TOKEN,
  MAX_TTL_MS,
  MIN_TTL_MS,
  campaignRequestSchema,
  candidateIdSchema,
  electionNameSchema,
  electionRequestSchema,
  fencingTokenSchema,
  leaseRequestSchema,
  parseRequest,
  ttlMsSchema,
} from './lib/validation';
export type { CampaignRequest, ElectionRequest, LeaseRequest } from './lib/validation';
export {
  EMPTY_SNAPSHOT,
  decideCampaign,
  decideRelease,
  decideRenew,
  leaseOrder,
  leaseRecordSchema,
  notOlderLease,
  vacantAtMs,
  viewOf,
} from './lib/lease';
export type {
  CampaignDecision,
  LeaderView,
  LeaseRecord,
  LeaseSnapshot,
  LeaseState,
  ReleaseDecision,
  RenewDecision,
  RenewRejection,
} from './lib/lease';
export { InMemoryLeaseStore } from './lib/lease-store';
export type { LeaseStore, WatchHandle } from './lib/lease-store';
export { KvLeaseStore } from './lib/kv-lease-store';
export type { KvLeaseStoreOptions } from './lib/kv-lease-store';
export {
  ELECTION_PACKAGE,
  ELECTION_PROTO_FILE,
  ELECTION_SERVICE,
  PROTO_LOADER_OPTIONS,
  WIRE_LEASE_STATE,
  campaignRequestFromWire,
  electionRequestFromWire,
  leaderStateFromWire,
  leaderStateToWire,
  leaseInfoFromWire,
  leaseInfoToWire,
  leaseRequestFromWire,
  resolveProtoRoot,
  sourceProtoRoot,
} from './lib/proto';
export type {
  CampaignRequestWire,
  ElectionRequestWire,
  LeaderStateWire,
  LeaseInfo,
  LeaseRequestWire,
  LeaseResponseWire,
  ReleaseResponseWire,
} from './lib/proto';
export { ElectionAuthority } from './lib/server/election-authority';
export type {
  ElectionAuthorityEvents,
  ElectionAuthorityOptions,
  LeaseOutcome,
  ReleaseOutcome,
} from './lib/server/election-authority';
export { LeaderWatchHub, viewKey } from './lib/server/leader-watch-hub';
export type { LeaderListener, LeaderWatchHubOptions } from './lib/server/leader-watch-hub';
export {
  agentAddressesSchema,
  electionClientEnvShape,
  electionClientOptionsFromEnv,
} from './lib/client/config';
export type { ElectionClientEnv } from './lib/client/config';
export { ElectionClient } from './lib/client/election-client';
export type {
  CallOptions,
  ElectionClientOptions,
  ElectionClientTls,
  ObserveHandle,
} from './lib/client/election-client';
export { LeaderElection } from './lib/client/leader-election';
export type {
  DeposedReason,
  ElectionTransport,
  LeaderElectionOptions,
  LeadershipTerm,
} from './lib/client/leader-election';
export { InProcessElectionTransport, leaseInfoOf } from './lib/client/in-process-transport';
