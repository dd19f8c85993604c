import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Runs V8's young-generation collection (a scavenge, about a millisecond). */
export type YoungGc = () => void;

type GcFunction = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async' }) => void;

/** V8 did not give the process a `gc` function. */
export class YoungGcUnavailableError extends Error {
  override readonly name = 'YoungGcUnavailableError';
}

/**
 * A function that runs a young-generation GC now. A store read of a trace leaves the store's copies
 * of its chunks (better-sqlite3 blobs, driver rows: as many bytes as the trace) unreachable but
 * allocated outside the V8 heap until the next scavenge, which the small JS objects holding them do
 * not bring about; a scavenge right after a large read frees them at once instead of letting the
 * next reads stack theirs on top. Uses the global `gc` when the process runs with `--expose-gc`,
 * else exposes it through V8's flags for a fresh context (Node's documented `v8.setFlagsFromString`
 * use; the global scope is left as it was). On Node 24 (V8 13) a scavenge that runs while a major
 * GC's incremental marking is under way frees none of them: they wait for that mark-compact (issue 24).
 * @throws YoungGcUnavailableError when V8 gives no `gc` function.
 */
export function loadYoungGc(): YoungGc {
  let gc = (globalThis as { gc?: unknown }).gc;
  if (typeof gc !== 'function') {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('typeof gc === "function" ? gc : undefined') as unknown;
  }
  if (typeof gc !== 'function') throw new YoungGcUnavailableError('V8 exposes no gc function (--expose-gc did not take effect)');
  const collect = gc as GcFunction;
  return () => collect({ type: 'minor' });
}
