import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { equipmentEventSubject, parseEquipmentEvent } from '@defender/contracts';
import { describeWithInfra, startSecuredNatsServer, type SecuredNatsServer } from '@defender/infra-harness';
import { ensureStreams, NotificationReader } from '@defender/nats-kv';
import { CtlError } from './commands';
import { resolveTarget } from './context';
import { equipmentEventOf, publishEvent } from './event';

const now = new Date(Date.UTC(2026, 11, 8, 1, 0));

describe('defenderctl event: the event it builds', () => {
  it('builds a valid event of each kind from the command line, and names every problem of a bad one', () => {
    expect(equipmentEventOf({ chamber: 'ETCH01:PM2', kind: 'pm', author: 'alice' }, now)).toEqual({
      schema: 1,
      toolId: 'ETCH01',
      chamberId: 'PM2',
      eventId: 'pm-20261208T010000000Z',
      kind: 'pm',
      at: now.toISOString(),
      author: 'alice',
      publishedAt: now.toISOString(),
    });
    expect(equipmentEventOf({ chamber: 'ETCH01:PM2', kind: 'part-change', parts: 'ESC, edge ring', id: 'pc-7', at: '2026-12-07T22:00:00Z' }, now)).toMatchObject({
      eventId: 'pc-7',
      parts: ['ESC', 'edge ring'],
      at: '2026-12-07T22:00:00Z',
    });
    expect(equipmentEventOf({ chamber: 'ETCH01:PM2', kind: 'long-idle', idleSeconds: '86400' }, now)).toMatchObject({ idleSeconds: 86_400 });
    expect(() => equipmentEventOf({ chamber: 'ETCH01:PM2', kind: 'note' }, now)).toThrow(/note is required for a note event/);
    expect(() => equipmentEventOf({ chamber: 'ETCH01:PM2', kind: 'pm', parts: 'ESC' }, now)).toThrow(/parts belongs to a part-change event only/);
    expect(() => equipmentEventOf({ chamber: 'ETCH01:PM2', kind: 'lunch' }, now)).toThrow(/kind/);
    expect(() => equipmentEventOf({ chamber: 'PM2', kind: 'pm' }, now)).toThrow(CtlError);
  });
});

/** Published into the notification stream as the equipment side, and only as it (the permission of deploy/nats/auth.conf). */
describeWithInfra(['nats'], 'defenderctl event on a real nats-server with the deployed users', () => {
  let nats: SecuredNatsServer;
  beforeAll(async () => {
    nats = await startSecuredNatsServer();
    const nc = await connect(nats.connectOptions('defender'));
    await ensureStreams(nc);
    await nc.close();
  }, 60_000);
  afterAll(async () => {
    await nats?.stop();
  });

  it('publishes as the publisher: stored once in the chamber\'s stream; as the read-only operator user it is refused', async () => {
    const publisher = nats.env('publisher');
    const target = resolveTarget({ nats: nats.target.url }, { NATS_TLS_CA_FILE: nats.pki.caCert, NATS_PUBLISHER_USER: publisher['NATS_USER'] as string, NATS_PUBLISHER_PASSWORD: publisher['NATS_PASSWORD'] as string }, null);
    const event = equipmentEventOf({ chamber: 'ETCH01:PM2', kind: 'clean', id: 'clean-1', note: 'wet clean' }, now);
    const first = await publishEvent(target, event);
    expect(first).toMatchObject({ subject: 'dc.ETCH01.PM2.event', duplicate: false });
    expect(await publishEvent(target, event)).toMatchObject({ sequence: first.sequence, duplicate: true });
    const nc = await connect(nats.connectOptions('defender'));
    try {
      const stored = await (await NotificationReader.open(nc)).next('dc.ETCH01.PM2.*', 1);
      expect(stored?.subject).toBe(equipmentEventSubject('ETCH01', 'PM2'));
      expect(parseEquipmentEvent(stored!.data)).toEqual(event);
      expect((await (await jetstreamManager(nc)).streams.info('dc-notifications')).state.messages).toBe(1);
    } finally {
      await nc.close();
    }
    // The dashboard's user (what defenderctl reads as) may not publish one.
    const dashboard = nats.env('dashboard');
    const readOnly = resolveTarget({ nats: nats.target.url }, { NATS_TLS_CA_FILE: nats.pki.caCert, NATS_USER: dashboard['NATS_USER'] as string, NATS_PASSWORD: dashboard['NATS_PASSWORD'] as string }, null);
    await expect(publishEvent(readOnly, equipmentEventOf({ chamber: 'ETCH01:PM2', kind: 'pm', id: 'pm-x' }, now))).rejects.toThrow(/did not store the event.*publisher role/);
  }, 60_000);
});
