import { knownLimits } from '@defender/uchart';
import { historyShortfall, steadyHistoryRuns, type ChamberHistory } from './chamber-history';
import { evaluate } from './evaluate';
import type { NewRun } from './readings';
import { DEFAULT_STRATEGY_DOCUMENT, WESTERN_ELECTRIC_STRATEGY_DOCUMENT } from './default-strategy';
import { parseStrategy, type DefenseStrategy } from './strategy';

const at = '2024-05-01T00:00:00.000Z';

function strategyWith(indicator: object, extra: object = {}): DefenseStrategy {
  return parseStrategy({ schemaVersion: 1, name: 'test', indicators: [{ id: 'x', svid: 'x', statistic: 'mean', ...indicator }], ...extra });
}

const reading = (value: number): NewRun['readings'] => [{ key: 'x', indicatorId: 'x', svid: 'x', value }];

/** Feeds values as runs (run-1, ...) the way a defender carries the history; `null` is a run without the indicator. */
function feed(strategy: DefenseStrategy, values: (number | null)[], history: ChamberHistory): ChamberHistory {
  let h = history;
  values.forEach((v, i) => {
    const run: NewRun = { runId: `run-${h.runs.length + i + 1}`, readings: v === null ? [] : reading(v) };
    h = { ...h, runs: [...h.runs, evaluate(h, run, strategy).record] };
  });
  return h;
}

/** The newest `n` runs of a history, as a short read would give them. */
const newest = (h: ChamberHistory, n: number): ChamberHistory => ({ ...h, runs: h.runs.slice(-n) });

describe('steadyHistoryRuns', () => {
  it('is the longest rule or escalation window: the chamber monitor 5 (3 alarmed runs in 5), Western Electric 8 (WE4)', () => {
    expect(steadyHistoryRuns(parseStrategy(DEFAULT_STRATEGY_DOCUMENT))).toBe(5);
    expect(steadyHistoryRuns(parseStrategy(WESTERN_ELECTRIC_STRATEGY_DOCUMENT))).toBe(8);
    expect(steadyHistoryRuns(strategyWith({ rules: [] }, { escalation: [] }))).toBe(1);
  });
});

describe('historyShortfall', () => {
  const we = strategyWith({ rules: ['western-electric'] }, { escalation: [] });
  const limits = knownLimits(we.indicators[0].chart, 0, 1, { frozenAt: at });

  it('says Phase I reads further back when an indicator has no limits', () => {
    const h = feed(we, [0.1, 0.2], { runs: [], limits: {} });
    expect(historyShortfall(h, reading(0), we)).toMatch(/^x has no limits/);
    // A reading without a value, or of an indicator the strategy does not have, needs nothing.
    expect(historyShortfall(h, [{ key: 'x', indicatorId: 'x', svid: 'x' }], we)).toBeUndefined();
    expect(historyShortfall(h, [{ key: 'y', indicatorId: 'y', svid: 'y', value: 1 }], we)).toBeUndefined();
  });

  it('needs the run rules\' window of points at the limits\' version, wherever they are among other runs', () => {
    const h = feed(we, [0.1, null, 0.2, null, null, 0.3, 0.1, -0.2, 0.4, 0.1, null], { runs: [], limits: { x: limits } });
    // WE4 reads 7 earlier points: the 11 runs hold 8 of them.
    expect(historyShortfall(h, reading(0), we)).toBeUndefined();
    expect(historyShortfall(newest(h, 9), reading(0), we)).toBe('x: 6 of the 7 earlier points its chart reads');
    // A point of an older version ends the chart: nothing older is read.
    const v2 = knownLimits(we.indicators[0].chart, 0, 1, { frozenAt: at, version: 2 });
    const after = feed(we, [0.1, 0.2], { ...h, limits: { x: v2 } });
    expect(historyShortfall(newest(after, 4), reading(0), we)).toBeUndefined();
    expect(historyShortfall(newest(after, 3), reading(0), we)).toBe('x: 2 of the 7 earlier points its chart reads');
  });

  it('needs the previous point of an EWMA or CUSUM, and a CUSUM excursion\'s points', () => {
    const cusum = strategyWith({ chart: { type: 'cusum', k: 0.5, h: 5 } }, { escalation: [] });
    const cl = knownLimits(cusum.indicators[0].chart, 0, 1, { frozenAt: at });
    const h = feed(cusum, [0, 0, 0, 1.5, 1.5, 1.5, null, 1.5], { runs: [], limits: { x: cl } });
    const last = h.runs.at(-1)?.points['x'];
    expect(last?.cusum?.upperRun).toBe(4);
    expect(historyShortfall(h, reading(1.5), cusum)).toBeUndefined();
    expect(historyShortfall(newest(h, 5), reading(1.5), cusum)).toBeUndefined();
    expect(historyShortfall(newest(h, 4), reading(1.5), cusum)).toBe('x: 3 of the 4 earlier points its chart reads');
    const ewma = strategyWith({ chart: { type: 'ewma', lambda: 0.2, L: 3 } }, { escalation: [] });
    const el = knownLimits(ewma.indicators[0].chart, 0, 1, { frozenAt: at });
    const e = feed(ewma, [0.1, null, null], { runs: [], limits: { x: el } });
    expect(historyShortfall(e, reading(0), ewma)).toBeUndefined();
    expect(historyShortfall(newest(e, 2), reading(0), ewma)).toBe('x: 0 of the 1 earlier points its chart reads');
  });

  it('needs as many runs as the escalation rules count', () => {
    const s = strategyWith({ rules: [] }, { escalation: [{ alarms: 3, withinRuns: 5, action: 'HOLD_CHAMBER' }] });
    const h = feed(s, [0, 0, 0, 0], { runs: [], limits: { x: knownLimits(s.indicators[0].chart, 0, 1, { frozenAt: at }) } });
    expect(historyShortfall(h, reading(0), s)).toBeUndefined();
    expect(historyShortfall(newest(h, 3), reading(0), s)).toBe('escalation reads 4 earlier runs, 3 read');
  });
});
