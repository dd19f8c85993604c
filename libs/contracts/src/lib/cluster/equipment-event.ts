import { z } from 'zod';
import { isoTimeSchema, subjectTokenSchema } from './shared';
import { parseWith } from './parse';
import { chamberSubject, parseChamberSubject } from './notification';

/**
 * What the equipment side says happened to a chamber between runs (issue 49, item 2): preventive
 * maintenance, a chamber clean, a part changed, seasoning runs, a recipe changed, a long idle, or a
 * note an engineer wants on the chamber's charts. Each kind is something after which a chamber's
 * levels may move together, which the monitor must know to tell a regime change from a fault.
 */
export const EQUIPMENT_EVENT_KINDS = ['pm', 'clean', 'part-change', 'seasoning', 'recipe-change', 'long-idle', 'note'] as const;
export type EquipmentEventKind = (typeof EQUIPMENT_EVENT_KINDS)[number];

/** Bounds of an equipment event (a few hundred bytes in practice). */
export const EQUIPMENT_EVENT_LIMITS = {
  eventId: 128,
  name: 256,
  /** Parts named by one part change. */
  parts: 64,
  note: 2000,
  /** Longest idle an event may report (a year), seconds. */
  idleSeconds: 366 * 24 * 3600,
} as const;

const name = z.string().min(1).max(EQUIPMENT_EVENT_LIMITS.name);
// eslint-disable-next-line no-control-regex -- a note is shown on charts: no control characters but newline and tab
const NOTE_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

/**
 * An equipment event, published on `dc.<toolId>.<chamberId>.event` by the equipment side (a host
 * system, fab-sim, `defenderctl event`). `eventId` is the idempotency key per chamber (as a run's
 * `runId`); `at` is when it happened on the tool. What each kind must carry:
 * `part-change` the parts, `recipe-change` the recipe, `long-idle` the idle time, `note` its text.
 */
export const equipmentEventSchema = z
  .object({
    schema: z.literal(1),
    toolId: subjectTokenSchema,
    chamberId: subjectTokenSchema,
    eventId: z.string().min(1).max(EQUIPMENT_EVENT_LIMITS.eventId),
    kind: z.enum(EQUIPMENT_EVENT_KINDS),
    at: isoTimeSchema,
    /** The recipe the event concerns (`recipe-change`: the recipe changed; otherwise all recipes). */
    recipe: name.optional(),
    /** `part-change`: the parts changed. */
    parts: z.array(name).min(1).max(EQUIPMENT_EVENT_LIMITS.parts).optional(),
    /** `long-idle`: how long the chamber stood idle, seconds. */
    idleSeconds: z.number().int().positive().max(EQUIPMENT_EVENT_LIMITS.idleSeconds).optional(),
    /** Free text shown with the event; required for `note`. */
    note: z.string().min(1).max(EQUIPMENT_EVENT_LIMITS.note).optional(),
    /** Who or what reported it (a person, a host system). */
    author: name.optional(),
    publishedAt: isoTimeSchema.optional(),
  })
  .strict()
  .superRefine((e, ctx) => {
    const need = (field: 'parts' | 'recipe' | 'idleSeconds' | 'note', kind: EquipmentEventKind) => {
      if (e.kind === kind && e[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `is required for a ${kind} event` });
    };
    need('parts', 'part-change');
    need('recipe', 'recipe-change');
    need('idleSeconds', 'long-idle');
    need('note', 'note');
    if (e.parts !== undefined && e.kind !== 'part-change') ctx.addIssue({ code: 'custom', path: ['parts'], message: 'belongs to a part-change event only' });
    if (e.idleSeconds !== undefined && e.kind !== 'long-idle') ctx.addIssue({ code: 'custom', path: ['idleSeconds'], message: 'belongs to a long-idle event only' });
    if (e.parts !== undefined && new Set(e.parts).size !== e.parts.length) ctx.addIssue({ code: 'custom', path: ['parts'], message: 'contains duplicates' });
    if (e.note !== undefined && NOTE_CONTROL.test(e.note)) ctx.addIssue({ code: 'custom', path: ['note'], message: 'contains control characters' });
  });

export type EquipmentEvent = z.infer<typeof equipmentEventSchema>;

/**
 * An equipment event from its JSON.
 * @throws InvalidMessageError (reason `invalid-json`, or the first problems by path) for anything else.
 */
export function parseEquipmentEvent(data: Uint8Array | string): EquipmentEvent {
  return parseWith('equipment event', equipmentEventSchema, data);
}

/** `dc.<tool>.<chamber>.event` */
export function equipmentEventSubject(toolId: string, chamberId: string): string {
  return chamberSubject(toolId, chamberId, 'event');
}

/** Tool and chamber of an equipment event subject, or undefined when the subject is not one. */
export function parseEquipmentEventSubject(subject: string): { toolId: string; chamberId: string } | undefined {
  return parseChamberSubject(subject, 'event');
}
