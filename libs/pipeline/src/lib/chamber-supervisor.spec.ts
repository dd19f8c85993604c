import type { ChamberRef } from '@defender/contracts';
import { ownerEpoch } from '@defender/membership';
import { ChamberSupervisor, epochAfterFence, SupervisorDeps } from './chamber-supervisor';
import { ChamberWorker, WorkerDeps, WorkerOptions } from './chamber-worker';

type Exit = (reason: 'stopped' | 'fenced' | 'error', err?: unknown) => void;

/** A worker whose life the test decides: it ends when the test calls `exit`. */
class ScriptedWorker extends ChamberWorker {
  onExit: Exit | undefined;
  notices: number[] = [];
  stopCalls = 0;
  stopHangs = false;

  override start(onExit: Exit): void {
    this.onExit = onExit;
  }
  override notify(seq: number): void {
    this.notices.push(seq);
  }
  override stop(): Promise<void> {
    this.stopCalls++;
    return this.stopHangs ? new Promise(() => undefined) : Promise.resolve();
  }
  exit(reason: 'stopped' | 'fenced' | 'error', err?: unknown): void {
    this.onExit?.(reason, err);
  }
}

function setup(generation = 1) {
  const workers: ScriptedWorker[] = [];
  const scheduled: { fn: () => void; ms: number }[] = [];
  const events: string[] = [];
  const invalidated: string[] = [];
  const deps: SupervisorDeps = {
    worker: {} as WorkerDeps,
    workerOptions: {} as WorkerOptions,
    claimGeneration: () => generation,
    schedule: (fn, ms) => void scheduled.push({ fn, ms }),
    // The low end of every jitter range: the delays are the backoff's floors (500, 1,000, ...).
    random: () => 0,
    invalidate: (c: ChamberRef) => void invalidated.push(`${c.toolId}:${c.chamberId}`),
    events: {
      workerCrashed: (c, err, ms) => events.push(`crashed ${c} ${(err as Error).message} ${ms}`),
      restartedAfterFence: (c, from, to) => events.push(`restarted ${c} ${from}->${to}`),
      orphansStarted: (v, cs) => events.push(`orphans v${v} ${cs.join(',')}`),
      forgotten: (c) => events.push(`forgotten ${c}`),
    },
    createWorker: (c, e, d, o) => {
      const w = new ScriptedWorker(c, e, d, o);
      workers.push(w);
      return w;
    },
  };
  const live = (s: ChamberSupervisor) => s.states().map((w) => `${w.chamber}@${w.epoch}`);
  return { s: new ChamberSupervisor(deps), workers, scheduled, events, invalidated, live };
}

describe('ChamberSupervisor', () => {
  it('runs one worker per acquired chamber, under the map version and claim generation', () => {
    const { s, workers, live } = setup(2);
    s.acquire(['t:a', 't:b'], 5);
    s.acquire(['t:a'], 6);
    expect(workers).toHaveLength(2);
    expect(live(s)).toEqual([`t:a@${ownerEpoch(5, 2)}`, `t:b@${ownerEpoch(5, 2)}`]);
    expect([s.notify('t:a', 7), s.notify('t:x', 7)]).toEqual([true, false]);
    s.wakeAll();
    expect(workers.map((w) => w.notices)).toEqual([[7, Number.MAX_SAFE_INTEGER], [Number.MAX_SAFE_INTEGER]]);
  });

  it('restarts a crashed worker after a pause that doubles per crash (with jitter above it), never one released meanwhile', async () => {
    const { s, workers, scheduled, events, live } = setup();
    s.acquire(['t:a', 't:b'], 3);
    workers[0]?.exit('error', new Error('boom'));
    workers[1]?.exit('error', new Error('bang'));
    expect(live(s)).toEqual([]);
    expect(scheduled.map((x) => x.ms)).toEqual([500, 500]);
    // t:b moves away while its restart waits: the restart is cancelled.
    await s.release(['t:b']);
    scheduled.splice(0).forEach((x) => x.fn());
    expect(live(s)).toEqual([`t:a@${ownerEpoch(3, 1)}`]);
    workers[2]?.exit('error', new Error('boom again'));
    expect(scheduled.map((x) => x.ms)).toEqual([1000]);
    expect(events).toEqual(['crashed t:a boom 500', 'crashed t:b bang 500', 'crashed t:a boom again 1000']);
  });

  it('restarts a fenced worker only under a newer applied map that owns its chamber, once', () => {
    const { s, workers, events, live } = setup();
    s.acquire(['t:a', 't:b'], 3);
    s.mapApplied(['t:a', 't:b'], 3);
    // Fenced under the map it was started with: left to the newer owner.
    workers[1]?.exit('fenced');
    expect(live(s)).toEqual([`t:a@${ownerEpoch(3, 1)}`]);
    // A map 7 that still owns t:a (this defender skipped 4-6, which moved it away and back).
    s.mapApplied(['t:a'], 7);
    workers[0]?.exit('fenced');
    expect(live(s)).toEqual([`t:a@${ownerEpoch(7, 1)}`]);
    // Fenced again at map 7's epoch: someone newer owns it; stop for good.
    workers[2]?.exit('fenced');
    expect(live(s)).toEqual([]);
    expect(events).toEqual(['forgotten t:b', 'forgotten t:a', `restarted t:a ${ownerEpoch(3, 1)}->${ownerEpoch(7, 1)}`, 'forgotten t:a']);
  });

  it('starts the chambers an applied map owns that have no worker', () => {
    const { s, events, live } = setup();
    s.acquire(['t:a'], 2);
    s.mapApplied(['t:a', 't:c'], 4);
    expect(live(s)).toEqual([`t:a@${ownerEpoch(2, 1)}`, `t:c@${ownerEpoch(4, 1)}`]);
    expect(events).toEqual(['orphans v4 t:c']);
  });

  it('release stops the workers and forgets their caches; drain stops all and starts nothing after', async () => {
    const { s, workers, scheduled, invalidated, live } = setup();
    s.acquire(['t:a', 't:b', 't:c'], 2);
    await s.release(['t:a', 't:zz']);
    expect([workers[0]?.stopCalls, invalidated, live(s).length]).toEqual([1, ['t:a'], 2]);
    workers[1]?.exit('error', new Error('late'));
    expect(await s.drain(60_000)).toBe(true);
    scheduled.forEach((x) => x.fn());
    s.acquire(['t:d'], 3);
    s.mapApplied(['t:d'], 3);
    expect(live(s)).toEqual([]);
  });

  it('drain reports runs still in flight after its timeout', async () => {
    const { s, workers } = setup();
    s.acquire(['t:a'], 2);
    if (workers[0]) workers[0].stopHangs = true;
    expect(await s.drain(1)).toBe(false);
  });
});

describe('epochAfterFence', () => {
  it('is the newest map epoch when it owns the chamber above the fenced epoch', () => {
    const map = { version: 9, owned: new Set(['t:a']) };
    expect(epochAfterFence(map, 't:a', ownerEpoch(4, 1), 1)).toBe(ownerEpoch(9, 1));
    expect(epochAfterFence(map, 't:a', ownerEpoch(9, 1), 1)).toBeUndefined();
    // The claim generation counts too: the same map, a newer generation of this defender's ID.
    expect(epochAfterFence(map, 't:a', ownerEpoch(9, 1), 2)).toBe(ownerEpoch(9, 2));
    expect(epochAfterFence(map, 't:b', ownerEpoch(4, 1), 1)).toBeUndefined();
    expect(epochAfterFence(undefined, 't:a', 1, 1)).toBeUndefined();
  });
});
