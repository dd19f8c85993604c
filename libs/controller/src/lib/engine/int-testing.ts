import type { EngineConfig } from './controller-engine';

/** Engine settings of the real-NATS tests: short intervals and windows, no chamber cooldown. */
export const INT_CONFIG: EngineConfig = {
  controllerId: 'c-test',
  trigger: { heartbeatIntervalMs: 200, coldStartWindowMs: 600, scaleWindowMs: 400, maxBatchWaitMs: 2000 },
  strategy: 'sticky-balanced',
  tolerance: 0.05,
  cooldownMs: 0,
  vnodes: 200,
  chamberRefreshMs: 60_000,
};

/**
 * Engine time driven by the engine's own sleeps, for the tests against real NATS KV: the monotonic
 * clock moves by exactly what the engine sleeps, and before it moves, the test's `beat` writes the
 * defenders' heartbeats (real KV puts) and any action queued with {@link atNextTick} runs. So
 * liveness, the trigger's windows and the rebalance policy's times are counted in engine ticks, the
 * same on an idle and on a loaded machine: a defender that beats is never judged dead, a 600 ms
 * window is three 200 ms ticks, and a scenario step happens at a known engine time.
 */
export class LockstepClock {
  private nowMs = 0;
  private sleeps = 0;
  private readonly queued: (() => Promise<void>)[] = [];

  /** `beat(clock)` is called in every engine sleep, before the clock moves. */
  constructor(private readonly beat: (clock: LockstepClock) => Promise<unknown>) {}

  /** The engine's monotonic clock, ms. */
  readonly monotonic = (): number => this.nowMs;

  /** Engine sleeps completed (one per tick, and one per retry). */
  get ticks(): number {
    return this.sleeps;
  }

  /** The engine's `sleep`. */
  readonly sleep = async (ms: number, signal: AbortSignal): Promise<void> => {
    if (signal.aborted) return;
    for (let a = this.queued.shift(); a; a = this.queued.shift()) await a();
    await this.beat(this);
    // A short real pause keeps the loop from spinning (and loading NATS) between ticks; no result
    // depends on its length.
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, Math.min(ms, 20));
      signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });
    this.nowMs += ms;
    this.sleeps += 1;
  };

  /** Runs `action` in the engine's next sleep, before the beat; resolves once it has run. */
  atNextTick(action: () => Promise<void> | void): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queued.push(async () => {
        try {
          await action();
          resolve();
        } catch (err) {
          reject(err);
          throw err;
        }
      });
    });
  }
}
