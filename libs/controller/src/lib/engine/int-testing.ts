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

/** The engine's `sleep`: real timers, woken early by the abort signal. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}
