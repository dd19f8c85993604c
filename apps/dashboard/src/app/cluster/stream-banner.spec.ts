import { parseStreamHealth, streamBanner, type DefenderStreamReport } from './stream-banner';

const S = 'dc-notifications';
const recreation = { was: '2026-12-07T10:00:00Z', now: '2026-12-07T11:00:00Z' };
const healthy = (defender: string, streamId = recreation.now): DefenderStreamReport => ({ defender, health: { streamId, missing: false, mismatchedChambers: [] } });

describe('streamBanner (the cluster view: a recreated notification stream is a problem until every defender reports it over, issue 52)', () => {
  it('no recreation and every defender healthy: nothing', () => {
    expect(streamBanner(S, null, [healthy('defender-1', 'x'), healthy('defender-2', 'x')])).toEqual({});
  });

  it('every defender reads the new stream, none missing, no chamber paused: the banner clears to a history line', () => {
    const b = streamBanner(S, recreation, [healthy('defender-1'), healthy('defender-2')]);
    expect(b.problem).toBeUndefined();
    expect(b.note).toBe(`stream ${S} was recreated at ${recreation.now} (was ${recreation.was}); every defender reads it and re-based its chambers`);
  });

  it.each<[string, DefenderStreamReport, RegExp]>([
    ['chambers paused on the old stream (named, at most three)', { defender: 'defender-2', health: { streamId: recreation.now, missing: false, mismatchedChambers: ['E1:PM1', 'E1:PM2', 'E2:PM1', 'E2:PM2'] } }, /defender-2: 4 chamber\(s\) paused on the old stream \(E1:PM1, E1:PM2, E2:PM1, …\)$/],
    ['the stream missing', { defender: 'defender-2', health: { streamId: recreation.was, missing: true, mismatchedChambers: [] } }, /defender-2 finds it missing$/],
    ['still reading the old stream (not checked since)', healthy('defender-2', recreation.was), /defender-2 has not read the new stream yet$/],
    ['no first check yet', { defender: 'defender-2', health: { streamId: undefined, missing: false, mismatchedChambers: [] } }, /defender-2 has not read the new stream yet$/],
    ['no answer', { defender: 'defender-2', health: null }, /defender-2 does not report yet$/],
  ])('one defender not over (%s): a problem line naming it, no history line', (_what, report, says) => {
    const b = streamBanner(S, recreation, [healthy('defender-1'), report]);
    expect(b.note).toBeUndefined();
    expect(b.problem).toMatch(new RegExp(`^stream ${S} was recreated at ${recreation.now} \\(was ${recreation.was}\\): its sequences restarted; chambers pause and re-base onto it \\(ADR 0007\\): `));
    expect(b.problem).toMatch(says);
    expect(b.problem).not.toContain('defender-1');
  });

  it('after a recreation with no defender running: a problem (nobody re-based)', () => {
    expect(streamBanner(S, recreation, []).problem).toMatch(/no defender answers$/);
  });

  it('without a recreation the dashboard saw (it started later): paused chambers are still a problem, a silent defender is not', () => {
    expect(streamBanner(S, null, [{ defender: 'defender-1', health: null }])).toEqual({});
    expect(streamBanner(S, null, [{ defender: 'defender-1', health: { streamId: 'b', missing: false, mismatchedChambers: ['E1:PM1'] } }])).toEqual({
      problem: `stream ${S}: defender-1: 1 chamber(s) paused on the old stream (E1:PM1)`,
    });
  });

  it('the defenders cannot be asked (no local fab): a history line that says the re-base is not confirmed, never a sticky problem', () => {
    const b = streamBanner(S, recreation, null);
    expect(b.problem).toBeUndefined();
    expect(b.note).toMatch(/not confirmed here/);
    expect(streamBanner(S, null, null)).toEqual({});
  });
});

describe("parseStreamHealth (a defender's GET /api/v1/chambers, validated at the edge)", () => {
  it('reads the stream part', () => {
    expect(parseStreamHealth({ chambers: [], stream: { stream: S, streamId: 'a', missing: false, mismatchedChambers: ['E1:PM1'] } })).toEqual({ streamId: 'a', missing: false, mismatchedChambers: ['E1:PM1'] });
    expect(parseStreamHealth({ chambers: [], stream: { stream: S, missing: true, mismatchedChambers: [] } })).toEqual({ streamId: undefined, missing: true, mismatchedChambers: [] });
  });

  it.each([null, 'x', { chambers: [] }, { stream: { missing: 'no', mismatchedChambers: [] } }, { stream: { missing: false, mismatchedChambers: [1] } }, { stream: { missing: false, streamId: 3, mismatchedChambers: [] } }])(
    'anything else is no report: %p',
    (body) => expect(parseStreamHealth(body)).toBeNull(),
  );
});
