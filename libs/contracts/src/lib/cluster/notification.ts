import { z } from 'zod';
import { isoTimeSchema, subjectTokenSchema } from './shared';
import { parseWith } from './parse';

/** Most SVIDs a notification may list (a run with more is rejected at the edge). */
export const MAX_NOTIFICATION_SVIDS = 5000;

const name = z.string().min(1).max(256);

/**
 * A run-completion notification, published by the data-collection layer on
 * `dc.<toolId>.<chamberId>.completed` after the run's trace is in the store.
 */
export const runNotificationSchema = z
  .object({
    schema: z.literal(1),
    toolId: subjectTokenSchema,
    chamberId: subjectTokenSchema,
    /** Unique per chamber; the idempotency key of the run. */
    runId: z.string().min(1).max(128),
    recipe: name,
    /** The run's context window. */
    contextWindow: z.object({ start: isoTimeSchema, end: isoTimeSchema }),
    /** SVIDs collected (the trace holds a series for each). */
    svids: z.array(name).min(1).max(MAX_NOTIFICATION_SVIDS),
    /** Where the trace is: the store, keyed by (tool, chamber, run). */
    trace: z.object({
      store: z.literal('default'),
      /** Samples per SVID as written, when the producer knows it (a cross-check). */
      samples: z.number().int().nonnegative().optional(),
    }),
    completedAt: isoTimeSchema,
    publishedAt: isoTimeSchema.optional(),
  })
  .superRefine((n, ctx) => {
    if (Date.parse(n.contextWindow.end) < Date.parse(n.contextWindow.start)) {
      ctx.addIssue({ code: 'custom', path: ['contextWindow', 'end'], message: 'is before start' });
    }
    if (new Set(n.svids).size !== n.svids.length) {
      ctx.addIssue({ code: 'custom', path: ['svids'], message: 'contains duplicates' });
    }
  });

export type RunNotification = z.infer<typeof runNotificationSchema>;

export function parseRunNotification(data: Uint8Array | string): RunNotification {
  return parseWith('run notification', runNotificationSchema, data);
}

/** `dc.<tool>.<chamber>.<last>`: a chamber's subject of the data-collection layer. */
export function chamberSubject(toolId: string, chamberId: string, last: 'completed' | 'event'): string {
  return `dc.${toolId}.${chamberId}.${last}`;
}

/**
 * `dc.<tool>.<chamber>.*`: everything of one chamber in the notification stream (its runs and its
 * equipment events), which a chamber's worker reads in stream order (ADR 0019).
 */
export function chamberStreamSubject(toolId: string, chamberId: string): string {
  return `dc.${toolId}.${chamberId}.*`;
}

/** Tool and chamber of `dc.<tool>.<chamber>.<last>`, or undefined when the subject is not one. */
export function parseChamberSubject(subject: string, last: 'completed' | 'event'): { toolId: string; chamberId: string } | undefined {
  const m = /^dc\.([A-Za-z0-9_-]{1,128})\.([A-Za-z0-9_-]{1,128})\.([a-z]+)$/.exec(subject);
  const [, toolId, chamberId, tail] = m ?? [];
  return toolId && chamberId && tail === last ? { toolId, chamberId } : undefined;
}

/** `dc.<tool>.<chamber>.completed` */
export function notificationSubject(toolId: string, chamberId: string): string {
  return chamberSubject(toolId, chamberId, 'completed');
}

/** Tool and chamber of a notification subject, or undefined when the subject is not one. */
export function parseNotificationSubject(subject: string): { toolId: string; chamberId: string } | undefined {
  return parseChamberSubject(subject, 'completed');
}

/** Dead-letter reasons (the last token of `dc.dead.<reason>`). */
export const DEAD_LETTER_REASONS = [
  'invalid-json',
  'invalid-notification',
  'invalid-event',
  'subject-mismatch',
  'unknown-chamber',
  'duplicate-run',
  'missing-trace',
  'corrupt-trace',
  'invalid-trace',
  'trace-too-large',
  'invalid-strategy',
  'no-indicators',
  'processing-failed',
] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/**
 * Largest notification the notification stream accepts (its `max_msg_size`): a notification is a few
 * hundred bytes plus its SVID names (200 SVIDs of 64 characters are 13 KB); anything near this is bad
 * input, refused at publication instead of travelling on as a dead letter.
 */
export const MAX_NOTIFICATION_BYTES = 256 * 1024;
/** Most bytes of the original payload a dead letter carries (the rest is counted, not copied). */
export const MAX_DEAD_LETTER_PAYLOAD_BYTES = 64 * 1024;
/** Most characters of a dead letter's `detail` (an error message can quote its input). */
export const MAX_DEAD_LETTER_DETAIL_CHARS = 4096;

/**
 * What is published on `dc.dead.<reason>`: the original message and why it was set aside. Bounded
 * whatever the input (at most ~93 KB of JSON, far below NATS's 1 MB `max_payload`): a payload above
 * {@link MAX_DEAD_LETTER_PAYLOAD_BYTES} is cut there (`payloadTruncated`, `payloadBytes` the original
 * size), and such a dead letter cannot be replayed from the stream.
 */
export interface DeadLetter {
  readonly schema: 1;
  readonly reason: DeadLetterReason;
  readonly detail: string;
  readonly subject: string;
  readonly streamSequence: number;
  /** The original payload (its first {@link MAX_DEAD_LETTER_PAYLOAD_BYTES}), base64: it may not be valid UTF-8 or JSON. */
  readonly payloadBase64: string;
  /** Size of the original payload, bytes. */
  readonly payloadBytes?: number;
  /** Present when `payloadBase64` holds only the payload's first bytes. */
  readonly payloadTruncated?: true;
  readonly defenderId: string;
  readonly attempts: number;
  readonly deadLetteredAt: string;
}

/** A dead letter for `payload`, with the payload and the detail cut to their bounds (see {@link DeadLetter}). */
export function deadLetterRecord(fields: Omit<DeadLetter, 'schema' | 'payloadBase64' | 'payloadBytes' | 'payloadTruncated'> & { readonly payload: Uint8Array }): DeadLetter {
  const { payload, detail, ...rest } = fields;
  const cut = payload.byteLength > MAX_DEAD_LETTER_PAYLOAD_BYTES;
  const kept = cut ? payload.subarray(0, MAX_DEAD_LETTER_PAYLOAD_BYTES) : payload;
  return {
    schema: 1,
    ...rest,
    detail: detail.length > MAX_DEAD_LETTER_DETAIL_CHARS ? `${detail.slice(0, MAX_DEAD_LETTER_DETAIL_CHARS - 1)}…` : detail,
    payloadBase64: Buffer.from(kept.buffer, kept.byteOffset, kept.byteLength).toString('base64'),
    payloadBytes: payload.byteLength,
    ...(cut ? { payloadTruncated: true as const } : {}),
  };
}
