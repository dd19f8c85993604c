import { RunTally } from './run-tally';
import type { RunEvents } from './ports';
import { FakeLoad } from './testing/fake-load';

function setup() {
  const lines: string[] = [];
  const events: RunEvents<string> = {
    received: (inflight) => void lines.push(`received ${inflight}`),
    processed: (chamber, sequence, _ms, outcome, inflight, cache) => void lines.push(`processed ${chamber} #${sequence} ${outcome} ${inflight} ${cache}`),
    strategyFound: (chamber, _scope, warn) => void lines.push(`strategy ${chamber} warn=${warn}`),
    streamMismatch: (chamber, _info, paused) => void lines.push(`mismatch ${chamber} ${paused}`),
    streamRebased: (chamber, _info, paused) => void lines.push(`rebased ${chamber} ${paused}`),
    mismatchForgotten: (chamber, paused) => void lines.push(`forgotten ${chamber} ${paused}`),
    fenced: (chamber, epoch) => void lines.push(`fenced ${chamber} ${epoch}`),
  };
  const load = new FakeLoad();
  const tally = new RunTally({ events, load, inflight: () => 2, cacheStats: () => 'stats' });
  return { tally, lines, load, o: tally.observer() };
}

describe('RunTally', () => {
  it('counts processed runs and reports them with the runs in flight and the cache statistics', () => {
    const { tally, lines, load, o } = setup();
    o.received?.('a:1', 1);
    o.processed?.('a:1', 1, 5, 'applied');
    o.processed?.('a:1', 2, 5, 'duplicate-run');
    o.processed?.('b:1', 3, 5, 'duplicate-run');
    o.processed?.('b:1', 4, 5, 'already-applied');
    o.processed?.('a:1', 5, 5, 'applied');
    expect(tally.processedTotal).toBe(5);
    expect(lines.slice(0, 3)).toEqual(['received 2', 'processed a:1 #1 applied 2 stats', 'processed a:1 #2 duplicate-run 2 stats']);
    o.traceSamples?.('a:1', 600);
    // Only applied runs count towards a chamber's run rate; every evaluated trace towards the CPU cost.
    expect(load.appliedRuns).toEqual(['a:1', 'a:1']);
    expect(load.samples).toEqual([600]);
    expect(tally.loadReport().rates.map(([c]) => c)).toEqual(['a:1']);
    tally.released(['a:1']);
    expect(load.released).toEqual(['a:1']);
  });

  it('keeps the chambers paused on a recreated stream until re-based or moved away', () => {
    const { tally, lines, o } = setup();
    const info = { recorded: 's1', current: 's2', highWaterMark: 9 };
    o.streamMismatch?.('a:1', info);
    o.streamMismatch?.('b:1', info);
    expect(tally.mismatchedChambers).toEqual(['a:1', 'b:1']);
    o.streamRebased?.('a:1', { from: 's1', to: 's2', offset: 9 });
    tally.forget('b:1');
    tally.forget('c:1');
    expect(tally.mismatchedChambers).toEqual([]);
    expect(lines).toEqual(['mismatch a:1 1', 'mismatch b:1 2', 'rebased a:1 1', 'forgotten b:1 0']);
  });

  it('warns of a deprecated strategy key once per chamber, and passes the other events on', () => {
    const { lines, o } = setup();
    const legacy = { scope: 't:c', kind: 'chamber', deprecated: true } as unknown as Parameters<NonNullable<typeof o.strategyFound>>[1];
    o.strategyFound?.('a:1', legacy);
    o.strategyFound?.('a:1', legacy);
    o.strategyFound?.('a:1', undefined);
    o.fenced?.('a:1', 7, new Error('newer owner'));
    expect(lines).toEqual(['strategy a:1 warn=true', 'strategy a:1 warn=false', 'strategy a:1 warn=false', 'fenced a:1 7']);
  });
});
