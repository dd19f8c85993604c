import type { LoadReport } from '@defender/contracts';

/**
 * What owns the processing of chambers (the run processor). Membership calls it when the assignment
 * map changes: first `release` of lost chambers (which must finish or abandon their in-flight runs
 * before returning), then `acquire` of gained ones.
 */
export interface ChamberWork {
  release(chambers: readonly string[]): Promise<void>;
  acquire(chambers: readonly string[], mapVersion: number): Promise<void>;
  /**
   * After each applied map (acquire and release done): every chamber this defender owns in it. A
   * worker fenced under an older map than this one, for a chamber the map still gives this
   * defender, is started again under it (processing/fence-restart.ts).
   */
  mapApplied?(owned: readonly string[], mapVersion: number): void;
  /** Stop taking new runs and wait for in-flight ones, at most `timeoutMs`. */
  drain(timeoutMs: number): Promise<void>;
  inflight(): number;
  processedTotal(): number;
  /** The heartbeat's measured load (ADR 0008); closes the measurement interval. */
  loadReport?(): LoadReport;
}

export const CHAMBER_WORK = Symbol('CHAMBER_WORK');
