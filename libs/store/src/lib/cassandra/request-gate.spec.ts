import fc from 'fast-check';
import { RequestGate } from './request-gate';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('RequestGate', () => {
  it('runs at most `limit` requests at once and the others in arrival order', async () => {
    const gate = new RequestGate(2);
    const started: number[] = [];
    const finish: (() => void)[] = [];
    const all = [0, 1, 2, 3, 4].map((i) =>
      gate.run(async () => {
        started.push(i);
        await new Promise<void>((r) => (finish[i] = r));
        return i;
      }),
    );
    await tick();
    expect(started).toEqual([0, 1]);
    expect([gate.running, gate.queued]).toEqual([2, 3]);
    finish[1]?.();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    finish[0]?.();
    finish[2]?.();
    await tick();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    finish[3]?.();
    finish[4]?.();
    await expect(Promise.all(all)).resolves.toEqual([0, 1, 2, 3, 4]);
    expect([gate.running, gate.queued]).toEqual([0, 0]);
  });

  it('passes a request error through and frees its slot', async () => {
    const gate = new RequestGate(1);
    await expect(gate.run(() => Promise.reject(new Error('timeout')))).rejects.toThrow('timeout');
    await expect(gate.run(async () => 'next')).resolves.toBe('next');
    expect(gate.running).toBe(0);
  });

  it('rejects a limit that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new RequestGate(bad)).toThrow(RangeError);
  });

  it('property: never more than `limit` in flight, every request runs once, errors stay with their request', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.boolean()), { maxLength: 60 }), async (limit, reqs) => {
        const gate = new RequestGate(limit);
        let now = 0;
        let peak = 0;
        const ran: number[] = [];
        const results = await Promise.allSettled(
          reqs.map(([ticks, fail], i) =>
            gate.run(async () => {
              now++;
              peak = Math.max(peak, now);
              ran.push(i);
              for (let t = 0; t < ticks; t++) await tick();
              now--;
              if (fail) throw new Error(`r${i}`);
              return i;
            }),
          ),
        );
        expect(peak).toBeLessThanOrEqual(limit);
        expect([...ran].sort((a, b) => a - b)).toEqual(reqs.map((_, i) => i));
        results.forEach((r, i) => expect(r.status).toBe(reqs[i]?.[1] ? 'rejected' : 'fulfilled'));
        expect([gate.running, gate.queued]).toEqual([0, 0]);
      }),
      { numRuns: 100 },
    );
  });
});
