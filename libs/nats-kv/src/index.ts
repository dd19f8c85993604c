export {
  ClaimLostError,
  NatsUnavailableError,
  PoolExhaustedError,
  RevisionConflictError,
  StreamMissingError,
  isStreamNotFound,
  isWrongLastSequence,
  mapKvError,
} from './lib/errors';
export { BUCKET_VALUE_LIMITS, DEFAULT_BUCKETS, listKeys, openBucket, recreateBucketIfMissing } from './lib/buckets';
export type { BucketOptions } from './lib/buckets';
export { MAX_GENERATION, STALE_AFTER_INTERVALS, StableIdRegistry } from './lib/stable-ids';
export type { HeldClaim, StableIdOptions } from './lib/stable-ids';
export { HeartbeatBucket } from './lib/heartbeats';
export { HeartbeatWriter } from './lib/heartbeat-writer';
export type { BadHeartbeat, ObservedHeartbeat } from './lib/heartbeats';
export {
  ASSIGNMENT_MAP_KEY,
  AssignmentMapBucket,
  assignmentChunkKey,
  chunkSlotFor,
} from './lib/assignment-map';
export type {
  AssignmentMapBucketOptions,
  MapPublication,
  MapScope,
  MapWatchHandlers,
  StoredMap,
} from './lib/assignment-map';
export { DEFAULT_STREAM_SETTINGS, STREAMS, STREAM_MESSAGE_LIMITS, ensureStreams, streamConfigs } from './lib/streams';
export type { StreamSettings } from './lib/streams';
export { NotificationReader, lastMessageId, publishOnce, publishStored, watchNotifications } from './lib/notifications';
export type { NotificationFeed, StoredAck, StoredNotification } from './lib/notifications';
export {
  DEFAULT_CHUNK_BYTES,
  MAX_MAP_VALUE_BYTES,
  decodeMap,
  encodeMap,
  valueDigest,
} from './lib/map-chunks';
export type { EncodedMap } from './lib/map-chunks';
export {
  DEFAULT_PERMISSION_NAMES,
  NATS_ROLES,
  roleParts,
  natsAuthorizationConfig,
  natsInboxPrefix,
  natsInboxPrefixFor,
  natsUserOfCertificate,
  natsPermissions,
  roleGrants,
  streamNames,
} from './lib/permissions';
export type { NatsPermissions, NatsRole, NatsUser, PermissionNames, RoleGrant } from './lib/permissions';
