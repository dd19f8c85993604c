import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { HeapInfo } from 'node:v8';
import type { HeartbeatSnapshot } from './heartbeat-beater';
import {
  HEARTBEAT_THREAD_BUNDLE_FILE,
  HEARTBEAT_THREAD_MARK,
  type FromHeartbeatThread,
  type HeartbeatThreadInit,
  type ToHeartbeatThread,
} from './heartbeat-thread-protocol';

/** What the main thread hears from its heartbeat thread. */
export interface HeartbeatThreadEvents {
  /** A heartbeat (and claim refresh) was written. */
  beat(): void;
  /** A write failed (NATS unavailable, bucket lost...); the thread tries again at the next slot. */
  failed(message: string): void;
  /** Another process took the stable ID: the thread stopped beating for good. */
  claimLost(message: string): void;
  /** The main thread was silent for `silentMs` (> the hang limit): beats were withheld meanwhile. */
  withheld(silentMs: number): void;
  /** The thread ended without being stopped (its error): nothing heartbeats any more. */
  died(err: Error): void;
}

/** Walks up from `dir` to the workspace root (the directory holding tools/scripts/register.js). */
function registerScript(dir: string): string {
  for (let d = dir; ; d = dirname(d)) {
    const candidate = join(d, 'tools', 'scripts', 'register.js');
    if (existsSync(candidate)) return candidate;
    if (dirname(d) === d) throw new Error(`heartbeat thread: tools/scripts/register.js not found above ${dir} (needed to run the thread from TypeScript source)`);
  }
}

/**
 * The thread allocates little (a heartbeat a second): a small young generation keeps its isolate
 * at ~18 MB of RSS instead of ~23 (measured beside a main thread with the NATS client loaded).
 * A V8 flag in NODE_OPTIONS overrides it (nodejs/node#43991): under the image's
 * `--max-semi-space-size=8` the thread's young generation is 16 MB (ADR 0014).
 */
const THREAD_LIMITS = { maxYoungGenerationSizeMb: 2 };

/** The thread's name, also its OS thread's (`/proc/<pid>/task/<tid>/comm`, `top -H`). */
export const HEARTBEAT_THREAD_NAME = 'heartbeat';

/**
 * From TypeScript source (jest, `node -r tools/scripts/register.js`) the thread registers the same
 * transpiler and requires its entry; from the app bundle it runs `heartbeat-thread.js` next to it.
 */
function startWorker(init: HeartbeatThreadInit): Worker {
  if (__filename.endsWith('.ts')) {
    const register = registerScript(__dirname);
    // Loaded here too so the native transpiler stays mapped when the thread exits (see ThreadedSqliteStore).
    createRequire(register)('@swc/core');
    const entry = join(__dirname, 'heartbeat-thread.worker.ts');
    return new Worker(`require(${JSON.stringify(register)}); require(${JSON.stringify(entry)});`, { eval: true, workerData: init, resourceLimits: THREAD_LIMITS, name: HEARTBEAT_THREAD_NAME });
  }
  const candidates = [join(__dirname, HEARTBEAT_THREAD_BUNDLE_FILE), ...(process.argv[1] ? [join(dirname(process.argv[1]), HEARTBEAT_THREAD_BUNDLE_FILE)] : [])];
  const script = candidates.find((c) => existsSync(c));
  if (!script) throw new Error(`heartbeat thread: ${HEARTBEAT_THREAD_BUNDLE_FILE} not found (looked at ${candidates.join(', ')}); the app bundle must include it as a second entry`);
  return new Worker(script, { workerData: init, resourceLimits: THREAD_LIMITS, name: HEARTBEAT_THREAD_NAME });
}

/**
 * The defender's heartbeat, written by a thread of its own (ADR 0013) so that a main thread busy
 * with runs (synchronous evaluations of up to seconds each, back to back) is never judged dead,
 * while a hung one still is: the main thread calls {@link pulse} every quarter interval from a
 * timer, and the thread withholds beats once no pulse came for `hangAfterMs`.
 */
export class HeartbeatThread {
  private readonly worker: Worker;
  private stopped: Promise<{ left: boolean; message?: string }> | undefined;
  private resolveStopped: ((r: { left: boolean; message?: string }) => void) | undefined;
  private ended = false;

  constructor(init: Omit<HeartbeatThreadInit, 'mark'>, events: HeartbeatThreadEvents) {
    this.worker = startWorker({ ...init, mark: HEARTBEAT_THREAD_MARK });
    this.worker.on('message', (msg: FromHeartbeatThread) => {
      switch (msg.type) {
        case 'beat':
          return events.beat();
        case 'failed':
          return events.failed(msg.message);
        case 'claim-lost':
          return events.claimLost(msg.message);
        case 'withheld':
          return events.withheld(msg.silentMs);
        case 'stopped':
          return this.resolveStopped?.({ left: msg.left, ...(msg.message ? { message: msg.message } : {}) });
      }
    });
    this.worker.on('error', (err) => {
      if (!this.stopped) events.died(err);
    });
    this.worker.on('exit', (code) => {
      this.ended = true;
      if (this.stopped) this.resolveStopped?.({ left: false, message: `heartbeat thread exited (${code})` });
      else if (code !== 0) events.died(new Error(`heartbeat thread exited with code ${code}`));
    });
  }

  /** The main thread runs; with a snapshot, the content of the next heartbeats. */
  pulse(snapshot?: HeartbeatSnapshot): void {
    if (this.stopped || this.ended) return;
    this.post({ type: 'pulse', ...(snapshot ? { snapshot } : {}) });
  }

  /**
   * Stops beating; with `leave`, removes the heartbeat and releases the claim (a clean shutdown:
   * the controller sees the leave at once). Resolves once the thread is done.
   */
  stop(leave: boolean): Promise<{ left: boolean; message?: string }> {
    this.stopped ??= (async () => {
      if (this.ended) return { left: false, message: 'heartbeat thread had ended' };
      const done = new Promise<{ left: boolean; message?: string }>((resolve) => {
        this.resolveStopped = resolve;
      });
      this.post({ type: 'stop', leave });
      const result = await done;
      await this.worker.terminate();
      return result;
    })();
    return this.stopped;
  }

  /** The thread's V8 heap (its own isolate); `undefined` once it stopped or cannot answer. */
  async heapStatistics(): Promise<HeapInfo | undefined> {
    if (this.stopped || this.ended) return undefined;
    try {
      return await this.worker.getHeapStatistics();
    } catch {
      return undefined; // it ended meanwhile
    }
  }

  /** The thread's CPU time since it started; `undefined` once it stopped or cannot answer. */
  async cpuUsage(): Promise<NodeJS.CpuUsage | undefined> {
    if (this.stopped || this.ended) return undefined;
    try {
      return await this.worker.cpuUsage();
    } catch {
      return undefined; // it ended meanwhile
    }
  }

  private post(msg: ToHeartbeatThread): void {
    this.worker.postMessage(msg);
  }
}
