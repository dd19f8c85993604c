import type { NotificationSource } from './ports';
import { Semaphore } from './semaphore';

/**
 * `source` with at most `permits` of its requests in flight at once (the rest wait in arrival
 * order). A defender runs a worker per chamber, and every worker asks NATS on its own: on a start
 * or a map change that gives a defender thousands of chambers, all of them ask at once, the
 * server's replies queue behind each other past the client's request timeout, and every chamber
 * pauses as if NATS were down (a 20,000-chamber chaos run: 22,470 timeouts in one defender's log).
 * Bounded, the same reads complete one batch after another.
 */
export function boundedSource(source: NotificationSource, permits: number): NotificationSource {
  const limit = new Semaphore(permits);
  const bounded = async <T>(call: () => Promise<T>): Promise<T> => {
    const release = await limit.acquire();
    try {
      return await call();
    } finally {
      release();
    }
  };
  const streamId = source.streamId?.bind(source);
  const lastSequence = source.lastSequence?.bind(source);
  return {
    next: (subject, fromSequence) => bounded(() => source.next(subject, fromSequence)),
    ...(streamId ? { streamId: () => bounded(streamId) } : {}),
    ...(lastSequence ? { lastSequence: () => bounded(lastSequence) } : {}),
  };
}
