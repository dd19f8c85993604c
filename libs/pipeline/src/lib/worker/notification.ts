import {
  eventRunId,
  InvalidMessageError,
  parseEquipmentEvent,
  parseEquipmentEventSubject,
  parseNotificationSubject,
  parseRunNotification,
  type EquipmentEvent,
  type RunNotification,
  type TraceRecord,
} from '@defender/contracts';
import type { NotificationMessage } from '../ports';
import { DeadLetterSignal } from './attempt-policy';

/** A run's notification or an equipment event (ADR 0019) as parsed once, or why it could not be. */
export type Parsed = { readonly n: RunNotification } | { readonly e: EquipmentEvent } | { readonly error: unknown };

/**
 * The notification of `msg`, checked against its subject.
 * @throws DeadLetterSignal (`invalid-json`, `invalid-notification`, `subject-mismatch`) for bad input.
 */
export function parseRun(msg: NotificationMessage): RunNotification {
  let n: RunNotification;
  try {
    n = parseRunNotification(msg.data);
  } catch (err) {
    if (!(err instanceof InvalidMessageError)) throw err;
    throw new DeadLetterSignal(err.reason === 'invalid-json' ? 'invalid-json' : 'invalid-notification', err.message, runIdOf(msg));
  }
  const subj = parseNotificationSubject(msg.subject);
  if (!subj || subj.toolId !== n.toolId || subj.chamberId !== n.chamberId) {
    throw new DeadLetterSignal('subject-mismatch', `payload names ${n.toolId}:${n.chamberId} but subject is ${msg.subject}`, n.runId);
  }
  return n;
}

/**
 * The equipment event of `msg` (a message of `dc.<tool>.<chamber>.event`), checked against its subject.
 * @throws DeadLetterSignal (`invalid-event`, `subject-mismatch`) for bad input.
 */
export function parseEvent(msg: NotificationMessage): EquipmentEvent {
  let e: EquipmentEvent;
  try {
    e = parseEquipmentEvent(msg.data);
  } catch (err) {
    if (!(err instanceof InvalidMessageError)) throw err;
    throw new DeadLetterSignal('invalid-event', err.message, runIdOf(msg));
  }
  const subj = parseEquipmentEventSubject(msg.subject);
  if (!subj || subj.toolId !== e.toolId || subj.chamberId !== e.chamberId) {
    throw new DeadLetterSignal('subject-mismatch', `payload names ${e.toolId}:${e.chamberId} but subject is ${msg.subject}`, eventRunId(e.eventId));
  }
  return e;
}

/** {@link parseRun} or {@link parseEvent} (by subject) once per message: its failure is kept and rethrown by each attempt. */
export function parseOnce(msg: NotificationMessage): Parsed {
  try {
    return parseEquipmentEventSubject(msg.subject) ? { e: parseEvent(msg) } : { n: parseRun(msg) };
  } catch (error) {
    return { error };
  }
}

/**
 * The run id a notification names (an event: `event:<eventId>`) if it is readable at all, else
 * `seq-<sequence>` (for dead letters).
 */
export function runIdOf(msg: NotificationMessage): string {
  try {
    const v = JSON.parse(Buffer.from(msg.data).toString('utf8')) as { runId?: unknown; eventId?: unknown };
    if (typeof v.runId === 'string' && v.runId.length > 0 && v.runId.length <= 100) return v.runId;
    if (typeof v.eventId === 'string' && v.eventId.length > 0 && v.eventId.length <= 100 && parseEquipmentEventSubject(msg.subject)) return eventRunId(v.eventId);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
  }
  return `seq-${msg.sequence}`;
}

/** Bytes a trace's arrays occupy (SVIDs and explicit times). */
export function traceBytes(trace: TraceRecord): number {
  let bytes = trace.timing.kind === 'explicit' ? trace.timing.timesSeconds.byteLength : 0;
  for (const a of trace.svids.values()) bytes += a.byteLength;
  return bytes;
}

/**
 * Memory a notification's trace will take, from its declared samples per SVID (at most 8 bytes
 * each; explicit sample times, if any, are charged once read); 0 when it declares none or exceeds
 * the trace limit (it is dead-lettered before any read).
 */
export function declaredTraceBytes(n: Pick<RunNotification, 'trace' | 'svids'>, maxTracePoints: number): number {
  const samples = n.trace.samples;
  if (samples === undefined || samples * n.svids.length > maxTracePoints) return 0;
  return samples * n.svids.length * 8;
}
