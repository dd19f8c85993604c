/**
 * Runs `fn` over `items` with at most `concurrency` calls in flight. On the first failure no new
 * call starts; the in-flight ones settle, then the first error is thrown.
 */
export async function runPool<T>(items: Iterable<T>, concurrency: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  const it = items[Symbol.iterator]();
  let failed = false;
  let firstError: unknown;
  const worker = async (): Promise<void> => {
    for (;;) {
      if (failed) return;
      const next = it.next();
      if (next.done) return;
      try {
        await fn(next.value);
      } catch (err) {
        if (!failed) {
          failed = true;
          firstError = err;
        }
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  if (failed) throw firstError;
}
