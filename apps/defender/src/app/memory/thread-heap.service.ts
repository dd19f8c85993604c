import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { HeapInfo } from 'node:v8';
import { StoreService } from '@defender/nest-common';
import { MembershipService } from '../membership/membership.service';
import { DefenderMetricsObserver } from '../metrics/defender-metrics-observer';

/** How often the threads' heaps are read (a message to each thread; microseconds of work). */
export const THREAD_HEAP_INTERVAL_MS = 5_000;

/**
 * Reports the V8 heaps and CPU time of the defender's other threads (`defender_thread_heap_bytes`,
 * `defender_thread_cpu_seconds_total`): the SQLite store's thread and the heartbeat thread each run
 * their own isolate, which Node's default metrics (the main thread's heap, the process's CPU) do not
 * show, so a memory budget and the CPU per run can be split by thread. Also the store's trace buffer
 * pool (`defender_trace_buffer_bytes`, `defender_trace_buffer_leases_total`), which lives on the
 * store's thread where it has one.
 */
@Injectable()
export class ThreadHeapService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: StoreService,
    private readonly membership: MembershipService,
    private readonly metrics: DefenderMetricsObserver,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sample(), THREAD_HEAP_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** Reads each thread's heap and CPU time once and reports them; a thread not running has no heap series. */
  async sample(): Promise<void> {
    const [store, heartbeat, storeCpu, heartbeatCpu, tracePool] = await Promise.all([
      this.store.threadHeap(),
      this.membership.heartbeatThreadHeap(),
      this.store.threadCpuUsage(),
      this.membership.heartbeatThreadCpuUsage(),
      this.store.tracePoolStats(),
    ]);
    this.metrics.threadHeap('store', toThreadHeap(store));
    this.metrics.threadHeap('heartbeat', toThreadHeap(heartbeat));
    this.metrics.threadCpu('store', cpuSeconds(storeCpu));
    this.metrics.threadCpu('heartbeat', cpuSeconds(heartbeatCpu));
    this.metrics.tracePool(tracePool);
  }
}

function cpuSeconds(u: NodeJS.CpuUsage | undefined): number | undefined {
  return u && (u.user + u.system) / 1e6;
}

function toThreadHeap(h: HeapInfo | undefined) {
  return h && { total: h.total_heap_size, used: h.used_heap_size, external: h.external_memory };
}
