/** A process chamber of a tool: the assignment unit. */
export interface ChamberRef {
  readonly toolId: string;
  readonly chamberId: string;
}

/** A chamber's record written by a run's commit, with the run that wrote it (stream sequence and id). */
export interface WrittenByRun extends ChamberRef {
  readonly sequence: number;
  readonly runId: string;
  readonly committedAt: Date;
}

/** One process run of a chamber. */
export interface RunRef extends ChamberRef {
  readonly runId: string;
}

/** Tool and chamber ids: 1-128 characters, no ':' (the key separator), no whitespace or control characters. */
// eslint-disable-next-line no-control-regex -- ids must not contain control characters
export const ID_PATTERN = /^[^\s:\u0000-\u001f\u007f]{1,128}$/;

/** True when `id` is usable as a tool or chamber id (see {@link ID_PATTERN}). */
export function isValidId(id: unknown): id is string {
  return typeof id === 'string' && ID_PATTERN.test(id);
}

/** The chamber key `<tool_id>:<chamber_id>` used in assignment maps and subjects. */
export function chamberKey(chamber: ChamberRef): string {
  return `${chamber.toolId}:${chamber.chamberId}`;
}

/**
 * Parses `<tool_id>:<chamber_id>`.
 *
 * @throws Error when the key has not exactly one ':' or an id is invalid.
 */
export function parseChamberKey(key: string): ChamberRef {
  const parts = key.split(':');
  if (parts.length !== 2 || !isValidId(parts[0]) || !isValidId(parts[1])) {
    throw new Error(`invalid chamber key "${key}" (expected <tool_id>:<chamber_id>)`);
  }
  return { toolId: parts[0], chamberId: parts[1] };
}

/** Same tool and chamber. */
export function sameChamber(a: ChamberRef, b: ChamberRef): boolean {
  return a.toolId === b.toolId && a.chamberId === b.chamberId;
}
