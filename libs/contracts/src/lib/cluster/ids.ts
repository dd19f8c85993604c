import { z } from 'zod';
import { DEFENDER_ID_PATTERN } from './stable-id';

/** `defender-<n>`, n a non-negative integer without leading zeros. */
export const defenderIdSchema = z.string().regex(DEFENDER_ID_PATTERN, 'must look like defender-<n>');

export type DefenderId = z.infer<typeof defenderIdSchema>;

/** One NATS subject token: letters, digits, `-` and `_` (no dots, wildcards or spaces). */
export const subjectTokenSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be 1-128 of [A-Za-z0-9_-]');

/** `<tool_id>:<chamber_id>`, each a subject token (it becomes `dc.<tool>.<chamber>.completed`). */
export const chamberKeySchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,128}:[A-Za-z0-9_-]{1,128}$/, 'must look like <tool_id>:<chamber_id>');


/** The n of `defender-<n>`, or undefined when `id` is not a defender id. */
export function defenderNumberOf(id: string): number | undefined {
  return defenderIdSchema.safeParse(id).success ? Number(id.slice('defender-'.length)) : undefined;
}

export function chamberKeyOf(toolId: string, chamberId: string): string {
  return `${toolId}:${chamberId}`;
}

/** Splits a chamber key; throws RangeError for a malformed one. */
export function splitChamberKey(key: string): { toolId: string; chamberId: string } {
  if (!chamberKeySchema.safeParse(key).success) throw new RangeError(`malformed chamber key "${key}"`);
  const i = key.indexOf(':');
  return { toolId: key.slice(0, i), chamberId: key.slice(i + 1) };
}
