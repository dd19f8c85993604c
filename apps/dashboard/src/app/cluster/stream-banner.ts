/**
 * The cluster view's notification-stream banner (issue 52: "stream recreated" never cleared). A
 * recreated stream restarts its sequences; every defender pauses the chambers whose mark counts in
 * the old one and re-bases them (ADR 0007). The banner is a problem line while that is not over, as
 * the defenders report it (`GET /api/v1/chambers` → `stream`), and a quiet history line after.
 */

/** When the dashboard saw the notification stream change identity (its `created` time). */
export interface StreamRecreation {
  /** The identity before and after. */
  readonly was: string;
  readonly now: string;
}

/** The `stream` part of a defender's `GET /api/v1/chambers`: the notification stream as it last checked. */
export interface DefenderStreamHealth {
  /** The identity the defender reads now; undefined before its first check. */
  readonly streamId: string | undefined;
  readonly missing: boolean;
  /** Chambers paused because their mark counts in another (the old) stream. */
  readonly mismatchedChambers: readonly string[];
}

/** One defender's answer; `health` null: it did not answer (or answered something else). */
export interface DefenderStreamReport {
  readonly defender: string;
  readonly health: DefenderStreamHealth | null;
}

/** What the cluster view shows: a problem line (alarming) and/or a history line (quiet). */
export interface StreamBanner {
  readonly problem?: string;
  readonly note?: string;
}

/** Chambers named in a problem line before "…". */
const NAMED = 3;

/**
 * The `stream` field of a defender's `GET /api/v1/chambers` body, or null when it is not one
 * (validated at the edge: a defender of another version, or something else on that port).
 */
export function parseStreamHealth(body: unknown): DefenderStreamHealth | null {
  if (typeof body !== 'object' || body === null) return null;
  const s = (body as Record<string, unknown>)['stream'];
  if (typeof s !== 'object' || s === null) return null;
  const r = s as Record<string, unknown>;
  const id = r['streamId'];
  const chambers = r['mismatchedChambers'];
  if (typeof r['missing'] !== 'boolean' || (id !== undefined && typeof id !== 'string')) return null;
  if (!Array.isArray(chambers) || !chambers.every((c) => typeof c === 'string')) return null;
  return { streamId: id, missing: r['missing'], mismatchedChambers: chambers as string[] };
}

function named(chambers: readonly string[]): string {
  const shown = chambers.slice(0, NAMED).join(', ');
  return chambers.length > NAMED ? `${shown}, …` : shown;
}

/**
 * The banner for the current state:
 * - a defender that reports the stream missing, or chambers paused on a mismatch: a problem line
 *   naming them (also without a recreation the dashboard saw: it may have started after it);
 * - after a recreation, a defender that did not answer or still reads the old stream, or no defender
 *   at all: a problem line (chambers may still be paused);
 * - after a recreation that every defender reports over (each reads the new stream, none missing, no
 *   chamber paused): a history line only;
 * - `reports` null (the dashboard cannot ask the defenders: outside the local fab it has no
 *   addresses for them): a history line that says the re-base is not confirmed here.
 * A stream the dashboard itself finds missing is another problem line (the caller's).
 */
export function streamBanner(stream: string, recreation: StreamRecreation | null, reports: readonly DefenderStreamReport[] | null): StreamBanner {
  const recreated = recreation ? `stream ${stream} was recreated at ${recreation.now} (was ${recreation.was})` : undefined;
  if (reports === null) {
    return recreated ? { note: `${recreated}: its sequences restarted; the defenders re-base their chambers onto it (ADR 0007); not confirmed here (the dashboard cannot ask the defenders): a chamber page shows a chamber still paused` } : {};
  }
  const troubles: string[] = [];
  if (recreation && reports.length === 0) troubles.push('no defender answers');
  for (const r of reports) {
    const h = r.health;
    if (h === null) {
      if (recreation) troubles.push(`${r.defender} does not report yet`);
      continue;
    }
    if (h.missing) troubles.push(`${r.defender} finds it missing`);
    else if (h.mismatchedChambers.length > 0) troubles.push(`${r.defender}: ${h.mismatchedChambers.length} chamber(s) paused on the old stream (${named(h.mismatchedChambers)})`);
    else if (recreation && h.streamId !== recreation.now) troubles.push(`${r.defender} has not read the new stream yet`);
  }
  if (troubles.length > 0) {
    const head = recreated ? `${recreated}: its sequences restarted; chambers pause and re-base onto it (ADR 0007)` : `stream ${stream}`;
    return { problem: `${head}: ${troubles.join('; ')}` };
  }
  return recreated ? { note: `${recreated}; every defender reads it and re-based its chambers` } : {};
}
