import { InvalidRecordError, type ChamberMetadata } from '@defender/contracts';
import type { RowGetter } from '../codec/rows';
import { ObservationsByChamber, observedChamberOf, recomputeOptions, sameObservedMetadata } from './recompute';

/** A `run_observations` row as the stores' getters read it. */
function row(toolId: string, runId: string, observedAt: number, svidCount = 10): RowGetter {
  const r: Record<string, unknown> = {
    tool_id: toolId,
    chamber_id: 'ch1',
    run_id: runId,
    observed_at: observedAt,
    svid_count: svidCount,
    collection_freq_hz: 1,
    context_duration_seconds: 600,
  };
  return (column) => r[column] ?? null;
}

const NOW = new Date(1_800_000_000_000);

describe('recomputeOptions', () => {
  it('defaults to a day and 50 runs, and refuses a bad window or run count', () => {
    expect(recomputeOptions()).toEqual({ windowSeconds: 86_400, maxRuns: 50 });
    expect(recomputeOptions({ windowSeconds: 60, maxRunsPerChamber: 3 })).toEqual({ windowSeconds: 60, maxRuns: 3 });
    expect(() => recomputeOptions({ windowSeconds: 0 })).toThrow(InvalidRecordError);
    expect(() => recomputeOptions({ windowSeconds: Number.NaN })).toThrow(InvalidRecordError);
    expect(() => recomputeOptions({ maxRunsPerChamber: 0 })).toThrow(InvalidRecordError);
  });
});

describe('ObservationsByChamber', () => {
  it('groups rows per chamber, keeps the first (newest) row of a run and at most maxRuns runs', () => {
    const o = new ObservationsByChamber(2);
    for (const g of [row('t1', 'r3', 3000, 12), row('t1', 'r3', 2500, 99), row('t1', 'r2', 2000, 10), row('t1', 'r1', 1000, 99), row('t2', 'x', 500, 4)]) {
      o.add(observedChamberOf(g), g);
    }
    expect(o.size).toBe(2);
    const out = [...o.metadata(NOW)];
    expect(out.map((x) => x.key)).toEqual(['t1:ch1', 't2:ch1']);
    // r3's newer row (12 SVIDs) and r2 (10): the median rounds to 11; r1 is past maxRuns.
    expect(out[0]!.metadata).toMatchObject({ toolId: 't1', chamberId: 'ch1', svidCount: 11, observedRuns: 2, source: 'observed', lastUpdated: NOW });
    expect(out[1]!.metadata).toMatchObject({ toolId: 't2', svidCount: 4, observedRuns: 1 });
  });

  it('without maxRuns keeps every run, and takes the observed time the caller read', () => {
    const o = new ObservationsByChamber();
    const g = row('t1', 'r1', 1000);
    o.add(observedChamberOf(g), g, new Date(42));
    for (let i = 0; i < 60; i++) {
      const h = row('t1', `s${i}`, 900 - i);
      o.add(observedChamberOf(h), h);
    }
    expect([...o.metadata(NOW)][0]!.metadata.observedRuns).toBe(61);
    expect(ObservationsByChamber.observedAt({ toolId: 't1', chamberId: 'ch1' }, g)).toEqual(new Date(1000));
  });
});

describe('sameObservedMetadata', () => {
  const m: ChamberMetadata = { toolId: 't', chamberId: 'c', svidCount: 10, collectionFreqHz: 1, contextDurationSeconds: 600, weight: 6000, lastUpdated: NOW, source: 'observed', observedRuns: 5 };
  it('is true only for an observed row with the same figures', () => {
    expect(sameObservedMetadata(m, { ...m, lastUpdated: new Date(0), observedRuns: 9 })).toBe(true);
    expect(sameObservedMetadata(undefined, m)).toBe(false);
    expect(sameObservedMetadata({ ...m, source: 'configured' }, m)).toBe(false);
    expect(sameObservedMetadata({ ...m, weight: 1 }, m)).toBe(false);
    expect(sameObservedMetadata({ ...m, svidCount: 11 }, m)).toBe(false);
  });
});
