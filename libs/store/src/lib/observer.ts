/** One store operation, reported to a {@link StoreObserver} (e.g. for `defender_cassandra_*_duration_seconds`). */
export interface StoreOperation {
  readonly store: 'cassandra' | 'sqlite';
  /** Repository method, e.g. `chamberState.commitRun`. */
  readonly operation: string;
  readonly kind: 'read' | 'write';
  readonly durationSeconds: number;
  readonly outcome: 'ok' | 'error';
}

/** Receives every store operation; must not throw (errors thrown by it are ignored). */
export type StoreObserver = (op: StoreOperation) => void;

/** Runs `fn`, maps its error, and reports the operation to `observer`. */
export async function observed<T>(
  observer: StoreObserver | undefined,
  store: StoreOperation['store'],
  operation: string,
  kind: StoreOperation['kind'],
  fn: () => Promise<T>,
  mapError: (err: unknown, operation: string) => unknown,
): Promise<T> {
  const started = performance.now();
  let outcome: StoreOperation['outcome'] = 'ok';
  try {
    return await fn();
  } catch (err) {
    outcome = 'error';
    throw mapError(err, operation);
  } finally {
    if (observer) {
      try {
        observer({ store, operation, kind, durationSeconds: (performance.now() - started) / 1000, outcome });
      } catch (observerError) {
        // A metrics hook must never turn a store result into a failure; report it where it can be seen.
        process.emitWarning(`store observer threw: ${String(observerError)}`);
      }
    }
  }
}
