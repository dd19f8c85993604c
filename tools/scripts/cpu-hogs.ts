/**
 * CPU hogs: child processes that spin on a core each, so a test run sees the machine as CI does when
 * other work shares it (`npm run test:busy`).
 */
import { ChildProcess, spawn } from 'node:child_process';

/** Running hogs; {@link CpuHogs.stop} kills them (also done when this process exits). */
export interface CpuHogs {
  readonly pids: readonly number[];
  /** Kills every hog (SIGKILL) and resolves when all have exited. Idempotent. */
  stop(): Promise<void>;
}

/** A bad hog count: a whole number from 0 to 64. */
export class HogCountError extends Error {
  override readonly name = 'HogCountError';
}

/** Parses a hog count (`TEST_BUSY_HOGS`); `undefined` gives `fallback`. @throws HogCountError */
export function parseHogCount(text: string | undefined, fallback = 2): number {
  if (text === undefined || text.trim() === '') return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 64) throw new HogCountError(`TEST_BUSY_HOGS must be a whole number from 0 to 64, is ${JSON.stringify(text)}`);
  return n;
}

/** Starts `count` processes that each spin one core until stopped. */
export function startCpuHogs(count: number): CpuHogs {
  const children: ChildProcess[] = [];
  for (let i = 0; i < count; i++) {
    children.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  }
  const exited = children.map((c) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()))));
  const killAll = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  };
  process.once('exit', killAll);
  return {
    pids: children.map((c) => c.pid ?? -1),
    async stop() {
      killAll();
      await Promise.all(exited);
      process.removeListener('exit', killAll);
    },
  };
}
