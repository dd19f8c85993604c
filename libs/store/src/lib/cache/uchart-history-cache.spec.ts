import { StoreUnavailableError, type ChamberRef, type DefenderStore, type RunPointSet, type UChartRepository } from '@defender/contracts';
import { commit, freshChamber, points } from '../../testing/fixtures';
import { SqliteStore } from '../sqlite/sqlite-store';
import { UChartHistoryCache } from './uchart-history-cache';

/** The runs as plain records: cached runs decode `points` on read (a getter), and carry summaries. */
function plain(runs: readonly RunPointSet[]): RunPointSet[] {
  return runs.map((r) => ({
    toolId: r.toolId,
    chamberId: r.chamberId,
    sequence: r.sequence,
    runId: r.runId,
    epoch: r.epoch,
    committedAt: r.committedAt,
    ...(r.recipe !== undefined ? { recipe: r.recipe } : {}),
    points: r.points,
  }));
}

// The cache's source is a real (in-memory SQLite) store; `loads` counts the loads that reach it (a load
// reads pages of runs, newest first: its first read is the one without `beforeSequence`), `pages` every read.
describe('UChartHistoryCache', () => {
  let store: DefenderStore;
  let loads: ChamberRef[];
  let pages: { limit: number; beforeSequence?: number }[];
  let source: Pick<UChartRepository, 'history'>;

  beforeEach(async () => {
    store = await SqliteStore.open({ filename: ':memory:' });
    loads = [];
    pages = [];
    source = {
      history: (chamber, options) => {
        if (options.beforeSequence === undefined) loads.push(chamber);
        pages.push(options);
        return store.uchart.history(chamber, options);
      },
    };
  });

  afterEach(async () => {
    await store.close();
  });

  async function commitRuns(ch: ChamberRef, from: number, to: number, indicators = 50): Promise<RunPointSet[]> {
    const out: RunPointSet[] = [];
    for (let seq = from; seq <= to; seq++) {
      const input = commit(ch, 1, seq, { points: points(indicators, seq) });
      await store.chamberState.commitRun(input);
      out.push({ ...ch, sequence: seq, runId: input.runId, epoch: 1, committedAt: input.committedAt, recipe: 'recipe-A', points: input.points });
    }
    return out;
  }

  it('serves a repeated lookup from memory and counts hits and misses', async () => {
    const ch = freshChamber();
    const runs = await commitRuns(ch, 1, 30);
    const cache = new UChartHistoryCache({ source, sizeMb: 10, runsPerChamber: 100 });
    expect(cache.stats()).toMatchObject({ hits: 0, misses: 0, hitRate: 0 });
    expect(plain(await cache.history(ch, { limit: 20 }))).toEqual(runs.slice(10));
    expect(plain(await cache.history(ch, { limit: 20 }))).toEqual(runs.slice(10));
    expect(plain(await cache.history(ch, { limit: 100 }))).toEqual(runs);
    expect(loads).toHaveLength(1);
    // The load read 10 runs at a time (never the whole history decoded at once), newest first.
    expect(pages).toEqual([{ limit: 10 }, { limit: 10, beforeSequence: 21 }, { limit: 10, beforeSequence: 11 }, { limit: 10, beforeSequence: 1 }]);
    expect(cache.stats()).toMatchObject({ hits: 2, misses: 1, chambers: 1 });
    expect(cache.stats().hitRate).toBeCloseTo(2 / 3, 12);
    cache.close();
  });

  it('appends recorded runs and keeps only the newest runsPerChamber', async () => {
    const ch = freshChamber();
    await commitRuns(ch, 1, 5);
    const cache = new UChartHistoryCache({ source, sizeMb: 10, runsPerChamber: 5 });
    await cache.history(ch, { limit: 5 });
    const newer = await commitRuns(ch, 6, 8);
    for (const r of newer) cache.record(r);
    cache.record(newer[0]!); // not newer than what is cached: ignored
    const got = await cache.history(ch, { limit: 5, highWaterMark: 8 });
    expect(got.map((r) => r.sequence)).toEqual([4, 5, 6, 7, 8]);
    expect(plain(got.slice(2))).toEqual(newer);
    expect(loads).toHaveLength(1);
    cache.close();
  });

  it('reloads when the owner knows a newer high-water mark (a missed update) and after invalidate', async () => {
    const ch = freshChamber();
    await commitRuns(ch, 1, 3);
    const cache = new UChartHistoryCache({ source, sizeMb: 10 });
    await cache.history(ch, { limit: 10, highWaterMark: 3 });
    await commitRuns(ch, 4, 4); // committed by another defender: this cache never saw it
    expect((await cache.history(ch, { limit: 10, highWaterMark: 4 })).map((r) => r.sequence)).toEqual([1, 2, 3, 4]);
    expect(loads).toHaveLength(2);
    cache.invalidate(ch);
    expect(cache.has(ch)).toBe(false);
    await cache.history(ch, { limit: 10 });
    expect(loads).toHaveLength(3);
    cache.close();
  });

  it('evicts least recently used chambers to stay within CACHE_SIZE_MB', async () => {
    const chambers = [freshChamber('a'), freshChamber('b'), freshChamber('c')];
    for (const ch of chambers) await commitRuns(ch, 1, 20, 50);
    const probe = new UChartHistoryCache({ source, sizeMb: 100 });
    await probe.history(chambers[0]!, { limit: 20 });
    const oneChamber = probe.stats().bytes;
    probe.close();
    // Room for two chambers, not three.
    const cache = new UChartHistoryCache({ source, sizeMb: (2.5 * oneChamber) / (1024 * 1024) });
    const [a, b, c] = chambers as [ChamberRef, ChamberRef, ChamberRef];
    await cache.history(a, { limit: 20 });
    await cache.history(b, { limit: 20 });
    await cache.history(a, { limit: 20 }); // a is now more recent than b
    await cache.history(c, { limit: 20 }); // evicts b
    expect([cache.has(a), cache.has(b), cache.has(c)]).toEqual([true, false, true]);
    const s = cache.stats();
    expect(s.evictions).toBe(1);
    expect(s.bytes).toBeLessThanOrEqual(s.capacityBytes);
    expect(s.bytes).toBe(2 * oneChamber);
    cache.close();
  });

  it('hands out runs that stay encoded: points decoded per read, count and flag union without decoding', async () => {
    const ch = freshChamber();
    const runs = await commitRuns(ch, 1, 6);
    const cache = new UChartHistoryCache({ source, sizeMb: 10 });
    for (const lookup of ['miss', 'hit']) {
      const got = await cache.history(ch, { limit: 6 });
      expect({ lookup, runs: plain(got) }).toEqual({ lookup, runs });
      got.forEach((r, i) => {
        const want = runs[i]!.points;
        expect(r.pointCount).toBe(want.length);
        expect(r.flagsUnion).toBe(want.reduce((u, p) => u | p.flags, 0) >>> 0);
        // Nothing decoded stays attached to the run: each read is a new array.
        expect(r.points).not.toBe(r.points);
      });
    }
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 1 });
    cache.close();
  });

  it('leaves out the points it is told to, loaded or recorded, and reads them from the store for allPoints', async () => {
    const ch = freshChamber();
    // Bit 28 marks what only some reads need (the pipeline's BASELINE_DATA); run 3 has nothing else.
    const LEAVE = 1 << 28;
    const flagged = (seq: number) => points(200, seq).map((p, i) => ({ ...p, flags: (i < 190 || seq === 3 ? LEAVE : 0) | (p.flags & 0xff) }));
    const runs: RunPointSet[] = [];
    for (let seq = 1; seq <= 6; seq++) {
      const input = commit(ch, 1, seq, { points: flagged(seq) });
      await store.chamberState.commitRun(input);
      runs.push({ ...ch, sequence: seq, runId: input.runId, epoch: 1, committedAt: input.committedAt, recipe: 'recipe-A', points: input.points });
    }
    const lean = (r: RunPointSet): RunPointSet => {
      const kept = r.points.filter((p) => (p.flags & LEAVE) === 0);
      return { ...r, points: kept.length > 0 ? kept : r.points };
    };
    const whole = new UChartHistoryCache({ source, sizeMb: 10, runsPerChamber: 10 });
    const cache = new UChartHistoryCache({ source, sizeMb: 10, runsPerChamber: 10, leaveOut: (p) => (p.flags & LEAVE) !== 0 });
    await whole.history(ch, { limit: 5 });
    const got = await cache.history(ch, { limit: 5 });
    expect(plain(got)).toEqual(runs.slice(1).map(lean));
    // Summaries are of the whole run; a run with nothing but left-out points is kept whole.
    got.forEach((r, i) => expect(r.flagsUnion).toBe(runs[i + 1]!.points.reduce((u, p) => u | p.flags, 0) >>> 0));
    expect(got[1]!.pointCount).toBe(200);
    expect(got[0]!.pointCount).toBe(10);
    expect(cache.stats().bytes).toBeLessThan(whole.stats().bytes / 2);

    const seven = commit(ch, 1, 7, { points: flagged(7) });
    await store.chamberState.commitRun(seven);
    const run7: RunPointSet = { ...ch, sequence: 7, runId: seven.runId, epoch: 1, committedAt: seven.committedAt, recipe: 'recipe-A', points: seven.points };
    cache.record(run7);
    expect(plain(await cache.history(ch, { limit: 2, highWaterMark: 7 }))).toEqual([runs[5]!, run7].map(lean));
    expect(loads).toHaveLength(2);
    // allPoints: every point, from the store; the cached lean runs stay.
    expect(plain(await cache.history(ch, { limit: 2, highWaterMark: 7, allPoints: true }))).toEqual([runs[5]!, run7]);
    expect(loads).toHaveLength(3);
    expect(plain(await cache.history(ch, { limit: 1, highWaterMark: 7 }))).toEqual([lean(run7)]);
    expect(loads).toHaveLength(3);
    // Without leaveOut every point is cached: allPoints is served from memory.
    await whole.history(ch, { limit: 2, highWaterMark: 7 });
    const before = loads.length;
    expect(plain(await whole.history(ch, { limit: 2, highWaterMark: 7, allPoints: true }))).toEqual([runs[5]!, run7]);
    expect(loads).toHaveLength(before);
    cache.close();
    whole.close();
  });

  it('does not cache a chamber larger than the whole budget, but still answers', async () => {
    const ch = freshChamber();
    const runs = await commitRuns(ch, 1, 10);
    const cache = new UChartHistoryCache({ source, sizeMb: 0.001 });
    expect(plain(await cache.history(ch, { limit: 10 }))).toEqual(runs);
    expect(cache.has(ch)).toBe(false);
    expect(cache.stats()).toMatchObject({ bytes: 0, chambers: 0 });
    cache.close();
  });

  it('loads a chamber once for concurrent misses; a lookup beyond runsPerChamber bypasses the cache', async () => {
    const ch = freshChamber();
    await commitRuns(ch, 1, 12);
    const cache = new UChartHistoryCache({ source, sizeMb: 10, runsPerChamber: 10 });
    const [x, y] = await Promise.all([cache.history(ch, { limit: 10 }), cache.history(ch, { limit: 4 })]);
    expect(x.map((r) => r.sequence)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(y.map((r) => r.sequence)).toEqual([9, 10, 11, 12]);
    expect(loads).toHaveLength(1);
    expect((await cache.history(ch, { limit: 12 })).map((r) => r.sequence)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(loads).toHaveLength(2);
    cache.close();
  });

  it('does not cache a load that a commit overtook, and caches nothing when the store fails', async () => {
    const ch = freshChamber();
    await commitRuns(ch, 1, 2);
    // The store answers a read taken before run 3 was committed only after the commit was recorded.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const slow: Pick<UChartRepository, 'history'> = {
      history: async (c, o) => {
        const snapshot = await store.uchart.history(c, o);
        await gate;
        return snapshot;
      },
    };
    const cache = new UChartHistoryCache({ source: slow, sizeMb: 10 });
    const pending = cache.history(ch, { limit: 10 });
    const [run3] = await commitRuns(ch, 3, 3);
    cache.record(run3!);
    release();
    expect((await pending).map((r) => r.sequence)).toEqual([1, 2]);
    expect(cache.has(ch)).toBe(false); // caching [1, 2] would have lost run 3
    expect((await cache.history(ch, { limit: 10 })).map((r) => r.sequence)).toEqual([1, 2, 3]);

    const failing = new UChartHistoryCache({ source: { history: () => Promise.reject(new StoreUnavailableError('down')) }, sizeMb: 10 });
    await expect(failing.history(ch, { limit: 5 })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(failing.has(ch)).toBe(false);
    expect(failing.stats()).toMatchObject({ misses: 1, hits: 0 });
    failing.close();
    cache.close();
  });
  it('hands out histories that stay intact after their chamber is evicted and its memory reused', async () => {
    const [a, b] = [freshChamber('a'), freshChamber('b')];
    const runsA = await commitRuns(a, 1, 10, 40);
    await commitRuns(b, 1, 10, 40);
    const probe = new UChartHistoryCache({ source, sizeMb: 100 });
    await probe.history(a, { limit: 10 });
    const oneChamber = probe.stats().bytes;
    probe.close();
    // Room for one chamber: loading b evicts a, and b's runs take a's freed blocks.
    const cache = new UChartHistoryCache({ source, sizeMb: (1.5 * oneChamber) / (1024 * 1024) });
    const held = await cache.history(a, { limit: 10 });
    await cache.history(b, { limit: 10 });
    expect([cache.has(a), cache.has(b)]).toEqual([false, true]);
    expect(plain(held)).toEqual(runsA);
    cache.close();
  });

  it('keeps its memory within CACHE_SIZE_MB under churn: evictions reuse the freed room', async () => {
    const chambers = Array.from({ length: 12 }, (_, i) => freshChamber(`churn-${i}`));
    const committed = new Map<ChamberRef, RunPointSet[]>();
    for (const [i, ch] of chambers.entries()) committed.set(ch, await commitRuns(ch, 1, 4, 20 + 10 * (i % 4)));
    const cache = new UChartHistoryCache({ source, sizeMb: 0.08, runsPerChamber: 8 });
    let peakArena = 0;
    // Round-robin over more chambers than fit, each lookup followed by a new run, as a defender does.
    for (let round = 0; round < 6; round++) {
      for (const [i, ch] of chambers.entries()) {
        const runs = committed.get(ch)!;
        const newest = runs[runs.length - 1]!.sequence;
        const got = await cache.history(ch, { limit: 8, highWaterMark: newest });
        expect(plain(got)).toEqual(runs.slice(-8));
        const [next] = await commitRuns(ch, newest + 1, newest + 1, 20 + 10 * (i % 4));
        runs.push(next!);
        cache.record(next!);
        const s = cache.stats();
        expect(s.bytes).toBeLessThanOrEqual(s.capacityBytes);
        expect(s.arenaBytes).toBeLessThanOrEqual(s.capacityBytes);
        peakArena = Math.max(peakArena, s.arenaBytes);
      }
    }
    const s = cache.stats();
    expect(s.evictions).toBeGreaterThan(12);
    expect(s.chambers).toBeLessThan(12);
    expect(peakArena).toBeLessThanOrEqual(s.capacityBytes);
    cache.clear();
    expect(cache.stats()).toMatchObject({ bytes: 0, chambers: 0, arenaBytes: 0 });
    cache.close();
  });
});
