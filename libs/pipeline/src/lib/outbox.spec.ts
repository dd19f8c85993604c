import fc from 'fast-check';
import { RECORD_LIMITS, type AlarmInput } from '@defender/contracts';
import { eventMsgId, markAfter, publishedPrefix, runEvents } from './outbox';

const chamber = { toolId: 'ETCH01', chamberId: 'PM2' };
const alarm = (ruleId: string, indicatorKey: string): AlarmInput => ({ ruleId, indicatorKey, action: 'ALARM', value: 3.5, message: `${ruleId} on ${indicatorKey}` });
const run = { sequence: 40, runId: 'r-40', recipe: 'R', epoch: 2 ** 21 + 3, ownerId: 'defender-4' };

describe('eventMsgId', () => {
  it.each([
    ['alarm', { ruleId: 'WE1', indicatorKey: 'R|main/P|mean' }, 'alarm:ETCH01:PM2:r-40:WE1:R|main/P|mean'],
    ['hold', { ruleId: 'escalation:2-of-5' }, 'hold:ETCH01:PM2:r-40:escalation:2-of-5:*'],
  ] as const)('names the chamber, the run id and the event (%s)', (kind, event, id) => {
    expect(eventMsgId(chamber, 'r-40', kind, event)).toBe(id);
  });

  it('is the same for the same event and different for different ones; long ids stay within the store limit', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 256 }), fc.string({ minLength: 1, maxLength: 512 }), fc.string({ minLength: 1, maxLength: 256 }), (runId, key, rule) => {
        const id = eventMsgId(chamber, runId, 'alarm', { ruleId: rule, indicatorKey: key });
        expect(id.length).toBeLessThanOrEqual(RECORD_LIMITS.msgId);
        expect(eventMsgId(chamber, runId, 'alarm', { ruleId: rule, indicatorKey: key })).toBe(id);
        expect(eventMsgId(chamber, runId, 'alarm', { ruleId: rule, indicatorKey: `${key}x` })).not.toBe(id);
        expect(eventMsgId(chamber, `${runId}x`, 'alarm', { ruleId: rule, indicatorKey: key })).not.toBe(id);
      }),
      { seed: 22, numRuns: 300 },
    );
  });
});

describe('runEvents', () => {
  it('alarms in order, then the hold, with payloads naming the run and the committing owner', () => {
    const events = runEvents(chamber, run, [alarm('WE1', 'k1'), alarm('WE2', 'k2')], { holdId: 'h1', ruleId: 'esc', reason: '2 of 5' });
    expect(events.map((e) => [e.subject, e.msgId])).toEqual([
      ['defense.alarms.ETCH01.PM2', 'alarm:ETCH01:PM2:r-40:WE1:k1'],
      ['defense.alarms.ETCH01.PM2', 'alarm:ETCH01:PM2:r-40:WE2:k2'],
      ['defense.holds.ETCH01.PM2', 'hold:ETCH01:PM2:r-40:esc:*'],
    ]);
    expect(JSON.parse(events[0]!.payload)).toEqual({ ...alarm('WE1', 'k1'), ...chamber, runId: 'r-40', sequence: 40, recipe: 'R', epoch: run.epoch, ownerId: 'defender-4' });
    expect(JSON.parse(events[2]!.payload)).toEqual({ holdId: 'h1', ruleId: 'esc', reason: '2 of 5', ...chamber, runId: 'r-40', sequence: 40, epoch: run.epoch, ownerId: 'defender-4' });
  });

  it('builds the same bytes for the same run every time (the payload is fixed at commit, whoever publishes it)', () => {
    const a = runEvents(chamber, run, [alarm('WE1', 'k1')]);
    expect(runEvents(chamber, { ...run }, [alarm('WE1', 'k1')])).toEqual(a);
    expect(runEvents(chamber, run, [])).toEqual([]);
  });
});

describe('markAfter', () => {
  it.each([
    [[], false, undefined],
    [[3, 3, 5], false, 5],
    [[3, 3, 5], true, 3],
    [[5, 5], true, undefined],
  ] as const)('%j (truncated %s) -> %s', (seqs, truncated, mark) => {
    expect(markAfter(seqs.map((sequence) => ({ sequence })), truncated)).toBe(mark);
  });

  it('marks only runs whose every event was on the page, and the last of them', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 40 }), (perRun, page) => {
        // Runs 1..n with perRun[i] events each; a page holds the first `page` pending entries.
        const all = perRun.flatMap((count, i) => Array.from({ length: count }, () => ({ sequence: i + 1 })));
        const shown = all.slice(0, page);
        const mark = markAfter(shown, shown.length === page);
        const complete = (seq: number) => all.filter((e) => e.sequence <= seq).length <= shown.length;
        const lastComplete = [...new Set(shown.map((e) => e.sequence))].filter((seq) => seq < shown.at(-1)!.sequence || shown.length < page).at(-1);
        if (mark !== undefined) expect(complete(mark)).toBe(true);
        expect(mark).toBe(lastComplete);
      }),
      { seed: 22, numRuns: 500 },
    );
  });
});

describe('publishedPrefix', () => {
  const pending = ['a', 'b', 'h', 'c'].map((msgId) => ({ msgId }));
  it.each([
    [[], 0],
    [['x'], 0],
    [['a'], 1],
    [['b', 'x'], 2],
    [['h', 'b'], 3],
    [['c', 'a'], 4],
  ] as const)('newest stored %j -> %d entries already published', (newest, n) => {
    expect(publishedPrefix(pending, new Set(newest))).toBe(n);
  });

  it('a publisher that stops anywhere leaves exactly its prefix recognisable (newest per subject)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('alarms', 'holds'), { minLength: 1, maxLength: 20 }), fc.nat(), (subjects, cut) => {
        const entries = subjects.map((subject, i) => ({ subject, msgId: `m${i}` }));
        const stored = entries.slice(0, cut % (entries.length + 1));
        const newest = new Set(['alarms', 'holds'].map((s) => stored.filter((e) => e.subject === s).at(-1)?.msgId).filter((id): id is string => id !== undefined));
        expect(publishedPrefix(entries, newest)).toBe(stored.length);
      }),
      { seed: 22, numRuns: 300 },
    );
  });
});
