import { declaredTraceBytes, parseOnce, parseRun, runIdOf, traceBytes } from './notification';
import { notificationOf, subject, traceOf } from './testing/fake-ports';

const msg = (data: string, subj = subject) => ({ subject: subj, sequence: 12, data: Buffer.from(data), storedAt: new Date(0) });

describe('parseRun', () => {
  it('reads a notification whose payload names the chamber of its subject', () => {
    expect(parseRun(msg(JSON.stringify(notificationOf('r1')))).runId).toBe('r1');
  });

  it.each([
    ['invalid-json', msg('{"runId":"r1"'), 'seq-12'],
    ['invalid-notification', msg(JSON.stringify({ runId: 'r1' })), 'r1'],
    ['subject-mismatch', msg(JSON.stringify(notificationOf('r2')), 'dc.t1.c9.completed'), 'r2'],
  ])('bad input is a dead letter (%s), with the run id as far as the payload names one', (reason, m, runId) => {
    expect(() => parseRun(m)).toThrow(expect.objectContaining({ name: 'DeadLetterSignal', reason, runId }) as Error);
    expect(parseOnce(m)).toEqual({ error: expect.objectContaining({ reason }) });
  });
});

describe('runIdOf', () => {
  it.each([
    ['{"runId":"r9"}', 'r9'],
    ['{"runId":""}', 'seq-12'],
    [JSON.stringify({ runId: 'x'.repeat(101) }), 'seq-12'],
    ['{"runId":7}', 'seq-12'],
    ['not json', 'seq-12'],
  ])('%s -> %s', (data, runId) => {
    expect(runIdOf(msg(data))).toBe(runId);
  });
});

describe('trace sizes', () => {
  it('a declared trace is charged 8 bytes a sample per SVID; undeclared or over the limit, nothing', () => {
    expect(declaredTraceBytes({ trace: { store: 'default', samples: 100 }, svids: ['a', 'b'] } as never, 1000)).toBe(1600);
    expect(declaredTraceBytes({ trace: { store: 'default' }, svids: ['a'] } as never, 1000)).toBe(0);
    expect(declaredTraceBytes({ trace: { store: 'default', samples: 600 }, svids: ['a', 'b'] } as never, 1000)).toBe(0);
  });

  it('a read trace weighs its arrays', () => {
    expect(traceBytes(traceOf('r1', 60))).toBe(480);
  });
});
