// The cluster contracts, by the module that defines them (explicit: no `export *`, issue 24).
export { InvalidMessageError, isoTime, parseWith } from './parse';
export {
  chamberKeyOf,
  chamberKeySchema,
  defenderIdSchema,
  defenderNumberOf,
  splitChamberKey,
  subjectTokenSchema,
} from './ids';
export type { DefenderId } from './ids';
export {
  DEFENDER_STATES,
  heartbeatSchema,
  loadReportSchema,
  MAX_RATES_PER_HEARTBEAT,
  parseHeartbeat,
} from './heartbeat';
export type { DefenderState, Heartbeat, LoadReport } from './heartbeat';
export { DEFENDER_ID_PATTERN, defenderIdOf, parseStableIdClaim } from './stable-id';
export type { StableIdClaim } from './stable-id';
export {
  assignmentMapChunkSchema,
  assignmentMapHeadSchema,
  assignmentMapSchema,
  CHAMBER_KEY_PATTERN,
  chunkEntryProblem,
  CLUSTER_STATES,
  isNewerMap,
  LIFECYCLE_STATES,
  MAX_MAP_CHUNKS,
  parseAssignmentMap,
  parseAssignmentMapChunk,
  parseStoredMapHead,
  tokenSchema,
} from './assignment-map';
export type {
  AssignmentMap,
  AssignmentMapChunk,
  AssignmentMapHead,
  MapChunkEntry,
  StoredMapHead,
} from './assignment-map';
export {
  DEAD_LETTER_REASONS,
  deadLetterRecord,
  MAX_DEAD_LETTER_DETAIL_CHARS,
  MAX_DEAD_LETTER_PAYLOAD_BYTES,
  MAX_NOTIFICATION_BYTES,
  MAX_NOTIFICATION_SVIDS,
  notificationSubject,
  chamberStreamSubject,
  parseNotificationSubject,
  parseRunNotification,
  runNotificationSchema,
} from './notification';
export type { DeadLetter, DeadLetterReason, RunNotification } from './notification';
export {
  EQUIPMENT_EVENT_KINDS,
  EQUIPMENT_EVENT_LIMITS,
  equipmentEventSchema,
  equipmentEventSubject,
  parseEquipmentEvent,
  parseEquipmentEventSubject,
} from './equipment-event';
export type { EquipmentEvent, EquipmentEventKind } from './equipment-event';
