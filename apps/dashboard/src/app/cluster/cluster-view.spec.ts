import type { AssignmentMap, Heartbeat } from '@defender/contracts';
import { buildDefenders, diffMaps, historyEntry, parseLease } from './cluster-view';

const hb = (defenderId: string, over: Partial<Heartbeat> = {}): Heartbeat => ({
  schema: 1,
  defenderId,
  podName: `pod-${defenderId}`,
  state: 'STABLE',
  mapVersionSeen: 2,
  load: { chambers: 1, inflight: 0, processedTotal: 9 },
  intervalSeconds: 2,
  startedAt: '2026-01-01T00:00:00.000Z',
  sentAt: '2026-01-01T00:00:00.000Z',
  ...over,
});

function map(version: number, owners: Record<string, string>, weights: Record<string, number>): AssignmentMap {
  const info: AssignmentMap['defenderInfo'] = {};
  for (const [c, d] of Object.entries(owners)) {
    const e = info[d] ?? { chambers: 0, weight: 0, capacity: 1 };
    info[d] = { chambers: e.chambers + 1, weight: e.weight + (weights[c] ?? 0), capacity: 1 };
  }
  const ws = Object.values(info).map((i) => i.weight);
  return {
    schema: 1,
    version,
    timestamp: '2026-01-01T00:00:00.000Z',
    state: 'STABLE',
    lifecycleState: 'stable',
    firstAssignmentAt: null,
    fencingToken: '3',
    controllerId: 'c',
    trigger: 'crash',
    defenderCount: ws.length,
    chamberCount: Object.keys(owners).length,
    assignments: owners,
    lastMovedAt: {},
    defenderInfo: info,
    statistics: {
      minChambersPerDefender: 0,
      maxChambersPerDefender: 0,
      avgChambersPerDefender: 0,
      minWeightPerDefender: Math.min(...ws),
      maxWeightPerDefender: Math.max(...ws),
      avgWeightPerDefender: ws.reduce((a, b) => a + b, 0) / ws.length,
      weightVariancePercent: 0,
      calculationDurationMs: 0.5,
      chambersMoved: 1,
      movedWeight: 10,
      movedWeightFraction: 0.25,
      floorFraction: 0.2,
    },
  };
}

describe('buildDefenders', () => {
  const now = Date.UTC(2026, 0, 1, 1);
  const m = map(2, { 'A:1': 'defender-0', 'B:1': 'defender-10', 'C:1': 'defender-2' }, { 'A:1': 30, 'B:1': 10, 'C:1': 20 });

  it('marks a defender MISSING once its heartbeat has not changed for 3 intervals, keeps map-only ones, sorts by number', () => {
    const rows = buildDefenders(
      [
        { heartbeat: hb('defender-10'), revision: 5, changedAt: now - 1000 },
        { heartbeat: hb('defender-0'), revision: 7, changedAt: now - 6500 },
        { heartbeat: hb('defender-3', { state: 'SHUTDOWN' }), revision: 2, changedAt: now - 100 },
      ],
      m,
      now,
    );
    expect(rows.map((r) => [r.defenderId, r.state, r.alive, r.chambers, r.inMap])).toEqual([
      ['defender-0', 'MISSING', false, 1, true],
      ['defender-2', 'MISSING', false, 1, true],
      ['defender-3', 'SHUTDOWN', false, 0, false],
      ['defender-10', 'STABLE', true, 1, true],
    ]);
    expect(rows[0]!.weightVsAvg).toBeCloseTo(1.5, 9);
    expect(rows[0]!.lastSeenSeconds).toBe(6.5);
    expect(rows[1]!.lastSeenSeconds).toBeNull();
  });
});

describe('map history', () => {
  it('diffs owners (moves, additions, removals) and summarises a version', () => {
    const a = map(1, { 'A:1': 'defender-0', 'B:1': 'defender-1', 'D:1': 'defender-1' }, {});
    const b = map(2, { 'A:1': 'defender-0', 'B:1': 'defender-0', 'C:1': 'defender-1' }, {});
    expect(diffMaps(a, b)).toEqual([
      { chamber: 'B:1', from: 'defender-1', to: 'defender-0' },
      { chamber: 'C:1', from: null, to: 'defender-1' },
      { chamber: 'D:1', from: 'defender-1', to: null },
    ]);
    const h = historyEntry(a, b, 12);
    expect(h).toMatchObject({ version: 2, revision: 12, trigger: 'crash', movesTotal: 3, movedWeightFraction: 0.25, floorFraction: 0.2 });
    expect(historyEntry(undefined, a, 1).moves).toEqual([]);
  });
});

describe('parseLease', () => {
  const now = Date.UTC(2026, 0, 1);
  it.each([
    [{ holder: 'c-1', token: 3, leaseExpiresAtMs: now + 5000, released: false }, { holder: 'c-1', epoch: '3', valid: true }],
    [{ holder: 'c-1', token: 3, leaseExpiresAtMs: now - 1, released: false }, { holder: 'c-1', valid: false }],
    [{ holder: 'c-1', token: 3, leaseExpiresAtMs: now + 5000, released: true }, { valid: false }],
  ])('%j', (rec, want) => expect(parseLease(JSON.stringify(rec), now)).toMatchObject(want));

  it('returns null for something that is not a lease record', () => {
    expect(parseLease('{nope', now)).toBeNull();
    expect(parseLease('{"holder":1}', now)).toBeNull();
  });
});
