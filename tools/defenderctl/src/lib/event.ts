/**
 * `defenderctl event`: an equipment event (a PM, a clean, a part change, ...) published into the
 * chamber's stream as the equipment side publishes it (ADR 0019), so the chamber applies it before its
 * next run. Only the publisher role may publish one; the event is checked here first, as the defender
 * would check it (a bad one would only be dead-lettered).
 */
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { equipmentEventSchema, equipmentEventSubject, parseChamberKey, type EquipmentEvent, type EquipmentEventKind } from '@defender/contracts';
import { natsInboxPrefix, publishStored } from '@defender/nats-kv';
import { CtlError, natsWhere } from './commands';
import { POINT_ELSEWHERE, type Target } from './context';

/** What the command line asks for. */
export interface EventRequest {
  readonly chamber: string;
  readonly kind: string;
  readonly id?: string;
  readonly at?: string;
  readonly note?: string;
  readonly parts?: string;
  readonly recipe?: string;
  readonly idleSeconds?: string;
  readonly author?: string;
}

/**
 * The equipment event `req` asks for, at `now` unless it says when.
 * @throws CtlError naming every problem (as the defender would dead-letter it).
 */
export function equipmentEventOf(req: EventRequest, now: Date): EquipmentEvent {
  let chamber;
  try {
    chamber = parseChamberKey(req.chamber);
  } catch (err) {
    throw new CtlError(`"${req.chamber}" is not a chamber key <tool>:<chamber>`, { cause: err });
  }
  const idle = req.idleSeconds === undefined ? undefined : Number(req.idleSeconds);
  const candidate = {
    schema: 1,
    ...chamber,
    eventId: req.id ?? `${req.kind}-${now.toISOString().replace(/[-:.]/g, '')}`,
    kind: req.kind as EquipmentEventKind,
    at: req.at ?? now.toISOString(),
    ...(req.recipe !== undefined ? { recipe: req.recipe } : {}),
    ...(req.parts !== undefined ? { parts: req.parts.split(',').map((p) => p.trim()).filter(Boolean) } : {}),
    ...(idle !== undefined ? { idleSeconds: idle } : {}),
    ...(req.note !== undefined ? { note: req.note } : {}),
    ...(req.author ? { author: req.author } : {}),
    publishedAt: now.toISOString(),
  };
  const parsed = equipmentEventSchema.safeParse(candidate);
  if (!parsed.success) {
    throw new CtlError(`not a valid ${req.kind} event: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'event'} ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

/** Where a published event stands in the notification stream. */
export interface PublishedEvent {
  readonly subject: string;
  readonly sequence: number;
  /** The same event (id) was published before: nothing new was stored. */
  readonly duplicate: boolean;
  readonly event: EquipmentEvent;
}

/**
 * Publishes `event` as the equipment side (`target.publisherCredentials`), deduplicated by its id.
 * @throws CtlError when NATS cannot be reached or refuses the publication (no publisher credentials).
 */
export async function publishEvent(target: Target, event: EquipmentEvent): Promise<PublishedEvent> {
  const cred = target.publisherCredentials;
  const nc = await connect({
    servers: target.natsServers,
    name: 'defenderctl-event',
    timeout: 5000,
    ...(cred ?? target.natsCredentials ?? {}),
    ...(cred ? { inboxPrefix: natsInboxPrefix(cred.user) } : {}),
    ...(target.natsTls ? { tls: { ...target.natsTls } } : {}),
  }).catch((err: unknown) => {
    throw new CtlError(`cannot reach NATS at ${natsWhere(target)}: ${(err as Error).message}; ${POINT_ELSEWHERE}`, { cause: err });
  });
  try {
    const subject = equipmentEventSubject(event.toolId, event.chamberId);
    const ack = await publishStored(jetstream(nc), subject, JSON.stringify(event), `event:${event.toolId}:${event.chamberId}:${event.eventId}`, { timeout: 10_000 }).catch((err: unknown) => {
      const why = (err as Error).message;
      const hint = cred ? '' : ' (equipment events are the publisher role\'s: set NATS_PUBLISHER_USER and NATS_PUBLISHER_PASSWORD, or use the local fab)';
      throw new CtlError(`NATS at ${natsWhere(target)} did not store the event: ${why}${hint}`, { cause: err });
    });
    return { subject, sequence: ack.seq, duplicate: ack.duplicate, event };
  } finally {
    await nc.close();
  }
}
