import type { AssignmentMap } from '@defender/contracts';
import { analyseTakeover, ChamberEvidence, checkInvariants, checkMapSequence, CommittedRun, EPOCH_GENERATION_SPAN, processingGaps, StreamEvidence, takeoverWithout } from './analysis';
import type { MapRecord } from './cluster';
import type { PublishedRun } from './publisher';

const E = (v: number, g = 0) => v * EPOCH_GENERATION_SPAN + g;

function pub(chamber: string, seq: number, at: number): PublishedRun {
  return { chamber, index: seq, runId: `r${seq}`, seq, publishedAt: at, shifted: false, attempts: 1 };
}
function commit(seq: number, epoch: number, at: number, extra: Partial<CommittedRun> = {}): CommittedRun {
  return { seq, runId: `r${seq}`, epoch, committedAt: at, hold: false, empty: false, ...extra };
}
function chamber(key: string, published: PublishedRun[], committed: CommittedRun[], over: Partial<ChamberEvidence> = {}): ChamberEvidence {
  return { key, published, committed, highWaterMark: committed.length ? Math.max(...committed.map((r) => r.seq)) : 0, alarms: [], ...over };
}
const streams = (over: Partial<StreamEvidence> = {}): StreamEvidence => ({
  notifications: { 'dc.t1.c1.completed': 3 },
  alarms: {},
  holds: {},
  deadLetters: {},
  ...over,
});
const good = () =>
  chamber('t1:c1', [pub('t1:c1', 1, 1000), pub('t1:c1', 4, 2000), pub('t1:c1', 9, 3000)], [commit(1, E(1), 1010), commit(4, E(1), 2010), commit(9, E(2), 3010)]);
const failed = (results: ReturnType<typeof checkInvariants>) => results.filter((r) => !r.ok).map((r) => r.id);

describe('checkInvariants', () => {
  it('accepts a chamber whose runs were applied once, in order, by non-decreasing epochs', () => {
    expect(failed(checkInvariants([good()], streams()))).toEqual([]);
  });

  it('flags a lost run, a doubled run, a run applied that was never published and a wrong mark', () => {
    const c = good();
    const lost = { ...c, committed: c.committed.slice(0, 2), highWaterMark: 4 };
    expect(failed(checkInvariants([lost], streams()))).toEqual(['exactly-once', 'high-water-mark']);
    const extra = { ...c, committed: [...c.committed, commit(12, E(2), 3100)], highWaterMark: 12 };
    expect(failed(checkInvariants([extra], streams()))).toEqual(['exactly-once', 'high-water-mark']);
    const twice = { ...c, committed: [...c.committed, { ...commit(11, E(2), 3200), runId: 'r9' }] };
    expect(checkInvariants([twice], streams()).find((r) => r.id === 'exactly-once')!.violations.join()).toMatch(/applied twice/);
  });

  it('flags a run the publisher never got acknowledged but the stream holds', () => {
    expect(failed(checkInvariants([good()], streams({ notifications: { 'dc.t1.c1.completed': 4 } })))).toEqual(['stream-matches-publisher']);
  });

  describe('with the stream\'s content read back (storedRuns)', () => {
    const stored = (...xs: [number, string][]) => ({ 'dc.t1.c1.completed': xs.map(([seq, runId]) => ({ seq, runId })) });

    it('holds when the stream holds exactly the acknowledged runs and they were applied', () => {
      expect(failed(checkInvariants([good()], streams({ storedRuns: stored([1, 'r1'], [4, 'r4'], [9, 'r9']) })))).toEqual([]);
    });

    it('judges the defenders on the stream, NATS on the acknowledgements: an acknowledged run stored at another sequence', () => {
      // NATS acknowledged r9 at seq 9, but its committed stream holds it at seq 8; the owner applied seq 8.
      const c = chamber('t1:c1', [...good().published], [commit(1, E(1), 1010), commit(4, E(1), 2010), { ...commit(8, E(2), 3010), runId: 'r9' }]);
      const s = streams({ storedRuns: stored([1, 'r1'], [4, 'r4'], [8, 'r9']) });
      const cluster = checkInvariants([c], s, { natsCluster: true });
      expect(failed(cluster)).toEqual(['stream-matches-publisher']);
      const nats = cluster.find((r) => r.id === 'stream-matches-publisher')!;
      expect(nats).toMatchObject({ blocking: false, violations: ['t1:c1: run r9 acknowledged at seq 9, stored at seq 8'] });
      // On one nats-server the same is a failure like any other.
      expect(checkInvariants([c], s).find((r) => r.id === 'stream-matches-publisher')!.blocking).toBeUndefined();
      // Applying what the publisher was told (seq 9), not what the stream holds, is a Defender violation.
      expect(failed(checkInvariants([good()], s, { natsCluster: true }))).toEqual(['exactly-once', 'high-water-mark', 'stream-matches-publisher']);
    });

    it('flags an acknowledged run the stream lost, and a run stored twice', () => {
      const lost = checkInvariants([good()], streams({ storedRuns: stored([1, 'r1'], [4, 'r4']) }), { natsCluster: true });
      expect(lost.find((r) => r.id === 'stream-matches-publisher')!.violations).toEqual(['t1:c1: run r9 acknowledged at seq 9, not in the stream']);
      // The defenders applied a run the stream does not hold.
      expect(lost.find((r) => r.id === 'exactly-once')!.violations).toEqual(['t1:c1: seq 9 (run r9) applied but not in the stream']);
      const twice = checkInvariants([good()], streams({ storedRuns: stored([1, 'r1'], [4, 'r4'], [9, 'r9'], [10, 'r9']) }));
      expect(twice.find((r) => r.id === 'stream-matches-publisher')!.violations).toEqual(['t1:c1: run r9 stored twice (seq 9 and 10)']);
    });
  });

  it('flags a deposed owner committing after a newer one (by sequence and by commit time)', () => {
    const c = good();
    const late = { ...c, committed: [commit(1, E(1), 1010), commit(4, E(2), 2010), commit(9, E(1), 3010)] };
    const r = checkInvariants([late], streams()).find((x) => x.id === 'single-owner')!;
    expect(r.ok).toBe(false);
    expect(r.violations.join('\n')).toMatch(/seq 9 committed by epoch .* after seq 4/);
    expect(r.violations.join('\n')).toMatch(/older than epoch/);
  });

  it('flags a stale-epoch commit that lands later in time even when sequence order looks fine', () => {
    const c = good();
    // seq 9 by the new owner at 3010, then the old owner's seq 4 commit lands at 3500 (impossible with fencing).
    const out = { ...c, committed: [commit(1, E(1), 1010), commit(4, E(1), 3500), commit(9, E(2), 3010)] };
    expect(failed(checkInvariants([out], streams()))).toEqual(['single-owner']);
  });

  it('checks alarms and holds against the stream', () => {
    const c = {
      ...good(),
      committed: [commit(1, E(1), 1010), commit(4, E(1), 2010, { hold: true }), commit(9, E(2), 3010)],
      alarms: [
        { seq: 4, runId: 'r4', ruleId: 'WE1', indicatorKey: 'k1' },
        { seq: 4, runId: 'r4', ruleId: 'WE1', indicatorKey: 'k2' },
      ],
    };
    const ok = streams({ alarms: { 'defense.alarms.t1.c1': 2 }, holds: { 'defense.holds.t1.c1': 1 } });
    expect(failed(checkInvariants([c], ok))).toEqual([]);
    expect(failed(checkInvariants([c], { ...ok, alarms: { 'defense.alarms.t1.c1': 3 } }))).toEqual(['alarms-once']);
    expect(failed(checkInvariants([c], { ...ok, holds: {} }))).toEqual(['holds-once']);
    const doubled = { ...c, alarms: [...c.alarms, c.alarms[0]!] };
    expect(checkInvariants([doubled], { ...ok, alarms: { 'defense.alarms.t1.c1': 3 } }).find((r) => r.id === 'alarms-once')!.violations.join()).toMatch(/stored twice/);
  });

  it('treats a dead-lettered (empty) run and any dead letter as violations for valid input', () => {
    const c = good();
    const empty = { ...c, committed: [c.committed[0]!, { ...c.committed[1]!, empty: true }, c.committed[2]!] };
    expect(failed(checkInvariants([empty], streams({ deadLetters: { 'dc.dead.processing-failed': 1 } })))).toEqual(['exactly-once', 'no-dead-letters']);
  });
});

function map(version: number, token: string, assignments: Record<string, string>): AssignmentMap {
  const info = Object.fromEntries([...new Set(Object.values(assignments))].map((d) => [d, { chambers: 1, weight: 1, capacity: 1 }]));
  return { version, fencingToken: token, assignments, defenderInfo: info, trigger: 'crash' } as unknown as AssignmentMap;
}

describe('checkMapSequence', () => {
  it('accepts versions +1 with tokens never lower, and flags a lower token', () => {
    const m = (v: number, t: string) => ({ revision: v, version: v, fencingToken: t });
    expect(checkMapSequence([m(1, '1'), m(2, '1'), m(3, '2')]).ok).toBe(true);
    expect(checkMapSequence([m(1, '2'), m(2, '1')]).violations.join()).toMatch(/stale leader/);
    expect(checkMapSequence([m(1, '1'), m(3, '1')]).violations).toEqual(['revision 3: version 3 after 1']);
  });

  it('counts a head whose chunks were superseded before they could be read (no gap in versions)', () => {
    const heads = [
      { revision: 4, version: 4, fencingToken: '7', superseded: false },
      { revision: 9, version: 5, fencingToken: '7', superseded: true },
      { revision: 12, version: 6, fencingToken: '8', superseded: false },
    ];
    expect(checkMapSequence(heads)).toMatchObject({ ok: true, checked: '3 maps' });
    expect(checkMapSequence(heads.filter((h) => !h.superseded)).violations).toEqual(['revision 12: version 6 after 4']);
  });
});

describe('analyseTakeover and processingGaps', () => {
  const maps: MapRecord[] = [
    { revision: 1, seenAt: 0, map: map(1, '1', { 'a:1': 'd0', 'a:2': 'd1', 'a:3': 'd1' }) },
    { revision: 2, seenAt: 5000, map: map(2, '1', { 'a:1': 'd0', 'a:2': 'd0', 'a:3': 'd0' }) },
  ];
  const ev: ChamberEvidence[] = [
    chamber('a:1', [pub('a:1', 1, 100)], [commit(1, E(1), 110)]),
    // Waiting since 4000, committed by the new owner at 5300.
    chamber('a:2', [pub('a:2', 2, 1000), pub('a:2', 5, 4000)], [commit(2, E(1), 1010), commit(5, E(2), 5300)]),
    // Nothing waiting at the takeover: its next run came at 6000.
    chamber('a:3', [pub('a:3', 3, 1000), pub('a:3', 6, 6000)], [commit(3, E(1), 1010), commit(6, E(2), 6010)]),
  ];

  it('finds the crash map, the orphaned and moved chambers, and the resume of chambers with waiting runs', () => {
    const a = analyseTakeover(maps, ev, ['d1'], 3000, new Map([['a:2', 10], ['a:3', 5]]));
    expect(a.map).toMatchObject({ version: 2 });
    expect(a.detectionMs).toBe(2000);
    expect(a.orphaned).toEqual(['a:2', 'a:3']);
    expect(a.moved).toEqual(['a:2', 'a:3']);
    expect(a.orphanedWeight).toBe(15);
    expect(a.resumeMs).toBe(2300);
    expect(a.resumes.find((r) => r.chamber === 'a:3')).toMatchObject({ waiting: false, firstCommitAt: 6010 });
  });

  it('restricts a takeover to the orphans a later crash did not catch, keeping detection and movement', () => {
    const a = analyseTakeover(maps, ev, ['d1'], 3000, new Map([['a:2', 10], ['a:3', 5]]));
    const rest = takeoverWithout(a, ['a:2']);
    expect(rest.resumes.map((r) => r.chamber)).toEqual(['a:3']);
    // a:3 had nothing waiting: no resume to time, first commit at 6010.
    expect(rest.resumeMs).toBeNull();
    expect(rest.firstResumeAt).toBe(6010);
    expect({ detectionMs: rest.detectionMs, moved: rest.moved, orphaned: rest.orphaned }).toEqual({ detectionMs: 2000, moved: ['a:2', 'a:3'], orphaned: ['a:2', 'a:3'] });
    expect(takeoverWithout(a, []).resumeMs).toBe(2300);
  });

  it('measures the largest stretch a waiting run saw no commit', () => {
    const gaps = processingGaps(ev, 0, 10_000);
    expect(gaps[0]).toMatchObject({ chamber: 'a:2', maxStallMs: 1300, maxLatencyMs: 1300 });
  });
});
