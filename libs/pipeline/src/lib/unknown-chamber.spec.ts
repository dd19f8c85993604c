import type { DeadLetter } from '@defender/contracts';
import { UnknownChamberDeadLetters, type UnknownChamberDeps } from './unknown-chamber';

const NOW = new Date('2026-11-28T00:00:00.000Z');
const SUBJECT = 'dc.t9.c9.completed';

function setup(over: Partial<UnknownChamberDeps> = {}) {
  const stream = new Map<number, Uint8Array>([[7, new TextEncoder().encode('{"runId":"r7"}')]]);
  const published: { subject: string; payload: string; msgId: string }[] = [];
  const events: string[] = [];
  const deps: UnknownChamberDeps = {
    read: async (_subject, seq) => {
      const next = [...stream.keys()].filter((s) => s >= seq).sort((a, b) => a - b)[0];
      return next === undefined ? null : { sequence: next, data: stream.get(next)! };
    },
    sink: { publish: async (subject, payload, msgId) => void published.push({ subject, payload, msgId }) },
    defenderId: () => 'defender-3',
    now: () => NOW,
    observer: {
      deadLettered: (chamber, seq) => events.push(`dead ${chamber} ${seq}`),
      failed: (chamber, seq, err) => events.push(`failed ${chamber} ${seq}: ${(err as Error).message}`),
    },
    ...over,
  };
  return { dl: new UnknownChamberDeadLetters(deps), published, events };
}

describe('UnknownChamberDeadLetters', () => {
  it('publishes the stored notification to dc.dead.unknown-chamber, once per chamber and sequence', async () => {
    const { dl, published, events } = setup();
    expect(await dl.deadLetter(SUBJECT, 't9:c9', 7)).toBe('dead-lettered');
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ subject: 'dc.dead.unknown-chamber', msgId: 'dead:t9:c9:7' });
    const letter = JSON.parse(published[0]!.payload) as DeadLetter;
    expect(letter).toMatchObject({
      reason: 'unknown-chamber',
      subject: SUBJECT,
      streamSequence: 7,
      defenderId: 'defender-3',
      attempts: 1,
      deadLetteredAt: NOW.toISOString(),
      payloadBytes: 14,
    });
    expect(Buffer.from(letter.payloadBase64, 'base64').toString()).toBe('{"runId":"r7"}');
    expect(letter.detail).toMatch(/^no defender owns t9:c9: it is not in the assignment map/);
    expect(events).toEqual(['dead t9:c9 7']);
  });

  it('a notification no longer in the stream (or a later one found instead) is left alone', async () => {
    const { dl, published, events } = setup();
    expect(await dl.deadLetter(SUBJECT, 't9:c9', 5)).toBe('gone'); // the next one stored is 7
    expect(await dl.deadLetter(SUBJECT, 't9:c9', 8)).toBe('gone');
    expect(published).toEqual([]);
    expect(events).toEqual([]);
  });

  it('never throws: a failed read or publication is reported and the notification stays in the stream', async () => {
    const failingSink = setup({ sink: { publish: async () => Promise.reject(new Error('no responders')) } });
    expect(await failingSink.dl.deadLetter(SUBJECT, 't9:c9', 7)).toBe('failed');
    expect(failingSink.events).toEqual(['failed t9:c9 7: no responders']);
    const failingRead = setup({ read: async () => Promise.reject(new Error('timeout')) });
    expect(await failingRead.dl.deadLetter(SUBJECT, 't9:c9', 7)).toBe('failed');
    expect(failingRead.events).toEqual(['failed t9:c9 7: timeout']);
  });

  it('a defender without an ID yet signs the dead letter "unknown"', async () => {
    const { dl, published } = setup({ defenderId: () => undefined });
    await dl.deadLetter(SUBJECT, 't9:c9', 7);
    expect(JSON.parse(published[0]!.payload)).toMatchObject({ defenderId: 'unknown' });
  });
});
