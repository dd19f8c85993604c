import type { ChamberInput, RecomputeDecision } from '@defender/assignment';
import type { AssignmentMap } from '@defender/contracts';
import { RevisionConflictError } from '@defender/nats-kv';
import type { EngineConfig } from './controller-engine';
import { MapKeeper } from './map-keeper';
import { Placement } from './placement';

const NOW = Date.UTC(2026, 11, 1, 8);
const config: EngineConfig = { controllerId: 'c-test', trigger: { heartbeatIntervalMs: 2000 }, strategy: 'sticky-balanced', tolerance: 0.05, cooldownMs: 0, vnodes: 200, chamberRefreshMs: 60_000 };
const IDS = ['defender-0', 'defender-1', 'defender-2'];

const coldStart: RecomputeDecision = {
  action: 'recompute',
  state: 'REBALANCING',
  trigger: 'cold_start',
  mode: 'balance',
  defenders: IDS,
  changes: { joined: IDS, left: [], crashed: [] },
  lifecycle: 'post_cold_start',
  restart: false,
};

/** A placement over a map bucket that records what was published; `lose` makes the next publish lose its compare-and-set. */
function setup(list: ChamberInput[]) {
  let mono = 0;
  let revision = 0;
  let lose = false;
  let listed = 0;
  const published: AssignmentMap[] = [];
  const keeper = new MapKeeper({
    maps: {
      read: async () => (published.length ? { map: published.at(-1)!, revision } : null),
      lastRevision: async () => revision,
      publish: async (map, expected) => {
        if (lose) {
          lose = false;
          throw new RevisionConflictError('map', 'head', expected ?? 0);
        }
        published.push(map);
        return ++revision;
      },
    },
    term: { fencingToken: '7', isLeader: () => true },
    controllerId: 'c-test',
    now: () => NOW,
    ensureLeader: () => undefined,
  });
  const placement = new Placement(config, {
    chambers: {
      list: async () => {
        listed++;
        return [...list];
      },
    },
    monotonic: () => (mono += 10),
    keeper,
  });
  const capacity = new Map(IDS.map((id) => [id, 1]));
  return { placement, keeper, published, capacity, listed: () => listed, loseNext: () => void (lose = true) };
}

const chambers = (n: number): ChamberInput[] => Array.from({ length: n }, (_, i) => ({ key: `tool${i}:ch1`, weight: 30_000 * (1 + (i % 3)) }));

describe('Placement', () => {
  it('publishes the recomputation the trigger asked for, every chamber placed, and says so first', async () => {
    const t = setup(chambers(9));
    const calls: string[] = [];
    await t.placement.recompute(coldStart, t.capacity, NOW, () => calls.push('published'));
    expect(calls).toEqual(['published']);
    expect(t.published).toHaveLength(1);
    const map = t.published[0]!;
    expect(map).toMatchObject({ version: 1, fencingToken: '7', trigger: 'cold_start', state: 'REBALANCING', lifecycleState: 'post_cold_start', chamberCount: 9, defenderCount: 3 });
    expect(new Set(Object.values(map.assignments))).toEqual(new Set(IDS));
  });

  it('a recomputation whose publication lost says nothing', async () => {
    const t = setup(chambers(9));
    t.loseNext();
    const calls: string[] = [];
    await t.placement.recompute(coldStart, t.capacity, NOW, () => calls.push('published'));
    expect(calls).toEqual([]);
    expect(t.published).toEqual([]);
  });

  it('on a stable tick places chambers added to the fab (read again once the refresh time passed), and nothing else', async () => {
    const list = chambers(9);
    const t = setup(list);
    await t.placement.recompute(coldStart, t.capacity, NOW, () => undefined);
    const idle = { action: 'idle', state: 'STABLE' } as const;
    await t.placement.stable(idle, t.capacity, NOW);
    expect(t.published).toHaveLength(1);
    list.push({ key: 'tool99:ch1', weight: 30_000 });
    // The list is re-read only every chamberRefreshMs (60 s; the fake clock moves 10 ms per read).
    await t.placement.stable(idle, t.capacity, NOW);
    expect(t.published).toHaveLength(1);
    const reads = t.listed();
    for (let i = 0; i < 6_000 && t.listed() === reads; i++) await t.placement.stable(idle, t.capacity, NOW);
    expect(t.published).toHaveLength(2);
    const next = t.published[1]!;
    expect(next).toMatchObject({ version: 2, trigger: 'chambers_changed', state: 'REBALANCING', chamberCount: 10 });
    expect(next.assignments['tool99:ch1']).toBeDefined();
    // Every chamber that was placed stays where it was.
    for (const c of chambers(9)) expect(next.assignments[c.key]).toBe(t.published[0]!.assignments[c.key]);
  });

  it('without load balancing it reports no balance and no CPU', () => {
    const t = setup(chambers(3));
    expect(t.placement.loadBalance).toBeUndefined();
    expect(t.placement.rebalanceAdvice).toBeUndefined();
    expect(t.placement.cpuByDefender()).toEqual({});
  });
});
