// Readers of JSON that came from outside the dashboard (event payloads, stored JSON documents): a
// field of the wrong type reads as absent, so a newer or malformed record shows what it can.

/** A JSON object (not an array), else undefined. */
export function jsonObject(v: unknown): Readonly<Record<string, unknown>> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Readonly<Record<string, unknown>>) : undefined;
}

/** A string, else null. */
export function stringOrNull(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

/** A finite number, else null. */
export function finiteOrNull(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}
