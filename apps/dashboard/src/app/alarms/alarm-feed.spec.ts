import { feedItemOf } from './alarm-feed.service';

describe('feedItemOf', () => {
  const at = new Date(Date.UTC(2026, 0, 1));
  it('reads alarms and holds from their subjects and payloads', () => {
    expect(feedItemOf('defense.alarms.ETCH01.PM2', 7, at, JSON.stringify({ runId: 'r1', sequence: 40, ruleId: 'WE2', svid: 'P', statistic: 'mean', value: 3.5, lcl: 1, ucl: 3, center: 2, action: 'ALARM', message: 'm' }))).toEqual({
      kind: 'alarm',
      seq: 7,
      at: at.toISOString(),
      chamber: 'ETCH01:PM2',
      toolId: 'ETCH01',
      chamberId: 'PM2',
      runId: 'r1',
      sequence: 40,
      recipe: null,
      ruleId: 'WE2',
      indicatorKey: null,
      svid: 'P',
      statistic: 'mean',
      value: 3.5,
      lcl: 1,
      ucl: 3,
      center: 2,
      action: 'ALARM',
      message: 'm',
    });
    expect(feedItemOf('defense.holds.T.C', 8, at, JSON.stringify({ runId: 'r2', reason: 'escalation' }))).toMatchObject({ kind: 'hold', action: 'HOLD_CHAMBER', message: 'escalation' });
  });

  it('skips what it cannot read', () => {
    expect(feedItemOf('defense.alarms.T.C', 1, at, 'not json')).toBeNull();
    expect(feedItemOf('dc.T.C.completed', 1, at, '{}')).toBeNull();
  });
});
