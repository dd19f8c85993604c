import { chamberKey, RECORD_LIMITS, type AlarmInput, type ChamberRef, type HoldInput, type OutboxEventInput } from '@defender/contracts';
import { xxh64Hex } from '@defender/hashing';

/** What a committed run's events say about it (the committing owner's epoch and id included). */
export interface RunEventContext {
  readonly sequence: number;
  readonly runId: string;
  readonly recipe?: string;
  /** Epoch and id of the owner that commits the run: written once, with the run, never by a publisher. */
  readonly epoch: number;
  readonly ownerId: string;
}

/**
 * Message id of an alarm or hold: one per (chamber, run id, rule, indicator), so that every owner,
 * and any notification of the same run, publishes it under the same id. Ids longer than the store
 * keeps (long run ids and indicator keys) end in a 64-bit hash of the full id instead.
 */
export function eventMsgId(chamber: ChamberRef, runId: string, kind: 'alarm' | 'hold', event: { readonly ruleId: string; readonly indicatorKey?: string }): string {
  const id = `${kind}:${chamberKey(chamber)}:${runId}:${event.ruleId}:${event.indicatorKey ?? '*'}`;
  if (id.length <= RECORD_LIMITS.msgId) return id;
  const hash = xxh64Hex(id);
  return `${id.slice(0, RECORD_LIMITS.msgId - hash.length - 1)}#${hash}`;
}

/**
 * The outbox events of a run, in publication order (alarms, then the hold), with the payloads as
 * they will be published: built once, before the commit, and stored with the run, so a later owner
 * publishes the same bytes under the same id.
 */
export function runEvents(chamber: ChamberRef, run: RunEventContext, alarms: readonly AlarmInput[], hold?: HoldInput): OutboxEventInput[] {
  const { toolId, chamberId } = chamber;
  const events: OutboxEventInput[] = alarms.map((a) => ({
    subject: `defense.alarms.${toolId}.${chamberId}`,
    msgId: eventMsgId(chamber, run.runId, 'alarm', a),
    payload: JSON.stringify({ ...a, toolId, chamberId, runId: run.runId, sequence: run.sequence, recipe: a.recipe ?? run.recipe, epoch: run.epoch, ownerId: run.ownerId }),
  }));
  if (hold) {
    events.push({
      subject: `defense.holds.${toolId}.${chamberId}`,
      msgId: eventMsgId(chamber, run.runId, 'hold', hold),
      payload: JSON.stringify({ ...hold, toolId, chamberId, runId: run.runId, sequence: run.sequence, epoch: run.epoch, ownerId: run.ownerId }),
    });
  }
  return events;
}

/**
 * The published-through mark after publishing `pending` (entries in (sequence, index) order): its
 * last run, or, when the list may have been cut short (`truncated`), the last run before the one it
 * ends in (whose other events may come on the next page); undefined when that is no run at all.
 */
export function markAfter(pending: readonly { readonly sequence: number }[], truncated: boolean): number | undefined {
  const last = pending.at(-1);
  if (!last) return undefined;
  if (!truncated) return last.sequence;
  return pending.findLast((e) => e.sequence < last.sequence)?.sequence;
}

/**
 * How many leading entries of `pending` (one chamber's outbox above its mark, in order) the stream
 * holds already, given the ids of the newest message stored on each of their subjects: entries are
 * published one at a time in outbox order, each after the one before was acknowledged, so the
 * newest stored one is preceded in the stream by every entry before it. 0 when none matches.
 */
export function publishedPrefix(pending: readonly { readonly msgId: string }[], newestIds: ReadonlySet<string>): number {
  for (let i = pending.length - 1; i >= 0; i--) if (newestIds.has(pending[i]?.msgId ?? '')) return i + 1;
  return 0;
}
