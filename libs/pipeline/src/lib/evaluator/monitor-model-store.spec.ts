import { fitMonitorModel, parseStrategy, type MonitorConfig, type MonitorModel } from '@defender/defense-rules';
import type { MonitorModelRecord } from '@defender/contracts';
import { decodeModel, legacyModelLimitSets, modelRecordOf, MonitorModelCache } from './monitor-model-store';

// The monitor model's lattice fields (issue 49, item 4) round-trip through its stored record (and the
// limit sets of an earlier release), and a model stored before them still loads, as a model without
// lattice sensors.
const cfg = parseStrategy({ schemaVersion: 1, name: 't', monitor: {} }).monitor as MonitorConfig;
const keys = ['m/A@s:mean', 'm/B@s:mean', 'm/C@s:mean', 'm/G@s:p05', 'm/G@s:p95'];
const rows = Array.from({ length: 30 }, (_, i) => {
  const f = Math.sin(i * 1.7);
  return [10 + f + 0.3 * Math.cos(i * 2.3), 20 + f + 0.3 * Math.sin(i * 3.1), 30 - f + 0.3 * Math.cos(i * 0.7), i % 10 === 3 ? 98 : 99, i % 10 === 7 ? 102 : 101];
});
const chamber = { toolId: 't', chamberId: 'c' };
const now = new Date(Date.UTC(2026, 11, 7));

function roundTrip(model: MonitorModel): MonitorModel | string {
  const input = modelRecordOf(model, now, 'initial', []);
  // As a store returns it: JSON.
  const record: MonitorModelRecord = { ...chamber, recipe: 'R', sequence: 1, runId: 'r1', committedAt: now, ...input, model: JSON.parse(JSON.stringify(input.model)) as MonitorModelRecord['model'] };
  const fromRecord = new MonitorModelCache().ofRecord(record);
  const records = legacyModelLimitSets(chamber, 'm:model', model, now, 'initial', []);
  const stored = JSON.parse(JSON.stringify(records)) as typeof records;
  const fromLimitSets = decodeModel(stored[stored.length - 1] as (typeof records)[number], stored, new MonitorModelCache());
  expect(fromLimitSets).toEqual(fromRecord);
  return fromRecord;
}

describe('monitor model store: lattices and attributes', () => {
  const model = fitMonitorModel(rows, keys, rows.map((_, i) => `r${i}`), cfg, { alarmArl: 370 });

  it('keeps a fitted model\'s lattices, attributes and lattice tolerances', () => {
    expect(model.lattices?.['G']).toMatchObject({ step: 1, source: 'learnt' });
    expect(model.attributes).toEqual(['m/G@s:p05', 'm/G@s:p95']);
    expect(roundTrip(model)).toEqual(model);
  });

  it('loads a model stored before them as one without lattice sensors', () => {
    const { lattices: _l, attributes: _a, ...older } = model;
    const decoded = roundTrip(older);
    expect(typeof decoded).not.toBe('string');
    expect((decoded as MonitorModel).lattices).toBeUndefined();
    expect((decoded as MonitorModel).attributes).toBeUndefined();
  });

  it('refuses malformed lattice fields with a reason', () => {
    expect(roundTrip({ ...model, attributes: 'm/G@s:p05' as unknown as string[] })).toMatch(/attributes/);
    expect(roundTrip({ ...model, lattices: [] as unknown as MonitorModel['lattices'] })).toMatch(/lattices/);
  });
});
