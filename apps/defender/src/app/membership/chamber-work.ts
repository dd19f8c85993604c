/**
 * What owns the processing of chambers (the run processor). Membership calls it when the assignment
 * map changes: first `release` of lost chambers (which must finish or abandon their in-flight runs
 * before returning), then `acquire` of gained ones.
 */
export interface ChamberWork {
  release(chambers: readonly string[]): Promise<void>;
  acquire(chambers: readonly string[], mapVersion: number): Promise<void>;
  /** Stop taking new runs and wait for in-flight ones, at most `timeoutMs`. */
  drain(timeoutMs: number): Promise<void>;
  inflight(): number;
  processedTotal(): number;
}

export const CHAMBER_WORK = Symbol('CHAMBER_WORK');
