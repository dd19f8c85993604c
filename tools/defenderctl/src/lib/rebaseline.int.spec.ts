import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DefenderStore, LimitSetRecord } from '@defender/contracts';
import { PENDING_BASELINE_CHART_TYPE } from '@defender/pipeline';
import { openStore } from '@defender/store';
import { CtlError, rebaseline } from './commands';

/** `defenderctl rebaseline` against a real SQLite store. */
describe('defenderctl rebaseline', () => {
  let dir: string;
  let store: DefenderStore;
  const chamber = { toolId: 'ETCH01', chamberId: 'PM2' };

  const limits = (indicatorKey: string, version: number, chartType: string): LimitSetRecord => ({
    ...chamber,
    indicatorKey,
    version,
    chartType,
    center: 1,
    sigma: chartType === 'monitor' ? null : 0.5,
    lcl: null,
    ucl: null,
    params: chartType === 'monitor' ? { model: { kind: 'monitor' } } : { nSigma: 3 },
    baseline: { reason: 'initial', runIds: ['r1', 'r2'], excludedRunIds: [] },
    createdAt: new Date(Date.UTC(2026, 0, 1)),
  });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ctl-rebaseline-'));
    store = await openStore({ kind: 'sqlite', sqlite: { filename: join(dir, 'store.db') } });
    await store.uchart.putLimitSet(limits('A|m:model', 1, 'monitor'));
    await store.uchart.putLimitSet(limits('A|mean/P', 1, 'individuals'));
    await store.uchart.putLimitSet(limits('A|mean/P', 2, 'individuals'));
    await store.uchart.putLimitSet(limits('B|mean/P', 1, 'individuals'));
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a pending re-baseline at the next version of every current limit set of the recipe, audited', async () => {
    const now = new Date(Date.UTC(2026, 10, 27, 12));
    const r = await rebaseline(store, 'ETCH01:PM2', { recipe: 'A', reason: 'wet clean', requestedBy: 'alice', excludeRunIds: ['r9'], minRuns: 25 }, now);
    expect(r.requests).toEqual([
      { indicatorKey: 'A|m:model', replacesVersion: 1, version: 2 },
      { indicatorKey: 'A|mean/P', replacesVersion: 2, version: 3 },
    ]);
    const history = await store.uchart.limitSetHistory(chamber, 'A|mean/P');
    expect(history.map((h) => [h.version, h.chartType])).toEqual([
      [1, 'individuals'],
      [2, 'individuals'],
      [3, PENDING_BASELINE_CHART_TYPE],
    ]);
    expect(history[2]).toMatchObject({
      params: { reason: 'wet clean', requestedBy: 'alice', excludeRunIds: ['r9'], minRuns: 25 },
      baseline: { reason: 'manual', excludedRunIds: ['r9'] },
    });
    expect(history[2]?.createdAt.toISOString()).toBe(now.toISOString());
    // Recipe B untouched.
    expect((await store.uchart.limitSet(chamber, 'B|mean/P'))?.version).toBe(1);
    // Asking again while pending changes nothing and says so.
    await expect(rebaseline(store, 'ETCH01:PM2', { recipe: 'A', reason: 'again', requestedBy: 'bob', excludeRunIds: [] }, now)).rejects.toThrow(
      /nothing to re-baseline/,
    );
  });

  it('refuses a bad key and a chamber without limits', async () => {
    await expect(rebaseline(store, 'ETCH01', { reason: 'x', requestedBy: 'a', excludeRunIds: [] }, new Date())).rejects.toThrow(CtlError);
    await expect(rebaseline(store, 'CVD09:PM1', { reason: 'x', requestedBy: 'a', excludeRunIds: [] }, new Date())).rejects.toThrow(
      /no limits yet/,
    );
  });
});
