import type { Heartbeat } from '@defender/contracts';
import { HeartbeatBeater, HeartbeatSnapshot } from './heartbeat-beater';

const I = 2000;
const snap = (processedTotal: number): HeartbeatSnapshot => ({
  schema: 1,
  defenderId: 'defender-0',
  state: 'STABLE',
  mapVersionSeen: 1,
  load: { chambers: 1, inflight: 0, processedTotal },
  intervalSeconds: I / 1000,
  startedAt: '2026-11-27T00:00:00.000Z',
});

function setup(opts: { failWith?: Error } = {}) {
  let t = 0;
  const written: { at: number; hb: Heartbeat }[] = [];
  const refreshed: number[] = [];
  const beater = new HeartbeatBeater(
    {
      refreshClaim: async () => {
        refreshed.push(t);
      },
      publish: async (hb) => {
        if (opts.failWith) throw opts.failWith;
        written.push({ at: t, hb });
      },
    },
    snap(0),
    { intervalMs: I, hangAfterMs: I, monotonic: () => t, now: () => 1_700_000_000_000 + t },
  );
  return {
    beater,
    written,
    refreshed,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('HeartbeatBeater (ADR 0013)', () => {
  it('beats once per interval at a fixed rate while the main thread pulses, with its latest snapshot', async () => {
    const s = setup();
    for (let step = 0; step < 40; step++) {
      if (step % 4 === 0) s.beater.pulse(snap(step));
      await s.beater.tick();
      s.advance(I / 4);
    }
    expect(s.written.map((w) => w.at)).toEqual([0, 2000, 4000, 6000, 8000, 10_000, 12_000, 14_000, 16_000, 18_000]);
    expect(s.refreshed).toEqual(s.written.map((w) => w.at));
    expect(s.written[3]?.hb.load.processedTotal).toBe(12);
    expect(s.written[0]?.hb.sentAt).toBe(new Date(1_700_000_000_000).toISOString());
  });

  it('keeps beating however long each of the main thread\'s tasks is, as long as it runs at least once per hang limit', async () => {
    const s = setup();
    // The main thread pulses once every 0.9 hang limit (its tasks that long, back to back): every slot beats.
    for (let step = 0; step < 200; step++) {
      if (step % 9 === 0) s.beater.pulse();
      await s.beater.tick();
      s.advance(I / 10);
    }
    const gaps = s.written.map((w, i) => (i === 0 ? I : w.at - s.written[i - 1]!.at));
    expect(Math.max(...gaps)).toBe(I);
    expect(s.written).toHaveLength(20);
  });

  it('withholds beats once the main thread is silent past the hang limit, says so once, and beats on the first pulse after', async () => {
    const s = setup();
    expect((await s.beater.tick()).kind).toBe('beat');
    s.advance(I);
    s.beater.pulse();
    expect((await s.beater.tick()).kind).toBe('beat');
    // Hung for 5 intervals.
    const outcomes: string[] = [];
    for (let step = 0; step < 20; step++) {
      s.advance(I / 4);
      outcomes.push((await s.beater.tick()).kind);
    }
    // The slot one hang limit after the last pulse still beats; none after it.
    expect(outcomes.filter((o) => o === 'withheld')).toHaveLength(1);
    expect(s.written.map((w) => w.at)).toEqual([0, 2000, 4000]);
    // Back: beats at once, not at the next slot.
    s.advance(100);
    s.beater.pulse();
    expect((await s.beater.tick()).kind).toBe('beat');
    expect(s.written.at(-1)?.at).toBe(12_100);
  });

  it('reports a failed write and tries again at the next slot', async () => {
    const s = setup({ failWith: new Error('NATS unavailable') });
    const first = await s.beater.tick();
    expect(first).toEqual({ kind: 'failed', error: new Error('NATS unavailable') });
    s.advance(I / 2);
    s.beater.pulse();
    expect((await s.beater.tick()).kind).toBe('none');
    s.advance(I / 2);
    expect((await s.beater.tick()).kind).toBe('failed');
  });

  it('rejects a non-positive interval or hang limit', () => {
    expect(() => new HeartbeatBeater({ refreshClaim: async () => undefined, publish: async () => undefined }, snap(0), { intervalMs: 0, hangAfterMs: I, monotonic: () => 0, now: () => 0 })).toThrow(RangeError);
  });
});
