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

/** `dc.<tool>.<chamber>.completed` */
export function notificationSubject(toolId: string, chamberId: string): string {
  return `dc.${toolId}.${chamberId}.completed`;
}

/** Tool and chamber of a notification subject, or undefined when the subject is not one. */
export function parseNotificationSubject(subject: string): { toolId: string; chamberId: string } | undefined {
  const m = /^dc\.([A-Za-z0-9_-]{1,128})\.([A-Za-z0-9_-]{1,128})\.completed$/.exec(subject);
  const [, toolId, chamberId] = m ?? [];
  return toolId && chamberId ? { toolId, chamberId } : undefined;
}

/** Dead-letter reasons (the last token of `dc.dead.<reason>`). */
export const DEAD_LETTER_REASONS = [
  'invalid-json',
  'invalid-notification',
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

/** What is published on `dc.dead.<reason>`: the original message and why it was set aside. */
export interface DeadLetter {
  readonly schema: 1;
  readonly reason: DeadLetterReason;
  readonly detail: string;
  readonly subject: string;
  readonly streamSequence: number;
  /** The original payload, base64 (it may not be valid UTF-8 or JSON). */
  readonly payloadBase64: string;
  readonly defenderId: string;
  readonly attempts: number;
  readonly deadLetteredAt: string;
}
