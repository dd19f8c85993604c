import { makeCounterProvider, makeGaugeProvider } from '@willsoto/nestjs-prometheus';

/**
 * Memory and thread metrics beside Node's defaults: the C heap (memory/malloc-trim.service.ts), the
 * V8 heaps and CPU time of the process's other threads and the store's trace buffer pool
 * (memory/thread-heap.service.ts), reported through DefenderMetricsObserver.
 */
export const MM = {
  trims: 'defender_malloc_trims_total',
  heap: 'defender_malloc_heap_bytes',
  threadHeap: 'defender_thread_heap_bytes',
  threadCpu: 'defender_thread_cpu_seconds_total',
  traceBuffers: 'defender_trace_buffer_bytes',
  traceLeases: 'defender_trace_buffer_leases_total',
} as const;

export const mallocMetricProviders = [
  makeCounterProvider({ name: MM.trims, help: 'malloc_trim calls (released: whether pages went back to the kernel)', labelNames: ['released'] }),
  makeGaugeProvider({
    name: MM.heap,
    help: 'glibc heap after the last trim, bytes (kind: heap, in_use, free, mmapped)',
    labelNames: ['kind'],
  }),
  makeGaugeProvider({
    name: MM.threadHeap,
    help:
      "V8 heap of a thread's own isolate, bytes (thread: store, heartbeat; kind: total, used, external); " +
      "the main thread's is nodejs_heap_size_total_bytes",
    labelNames: ['thread', 'kind'],
  }),
  makeCounterProvider({
    name: MM.threadCpu,
    help:
      "CPU time (user + system) of a thread's own isolate, seconds (thread: store, heartbeat); the whole process's is " +
      'process_cpu_seconds_total, so the main thread has the rest',
    labelNames: ['thread'],
  }),
  makeGaugeProvider({
    name: MM.traceBuffers,
    help: "The store's pool of trace buffers, bytes (kind: free = held for the next reads, capacity = the most it holds)",
    labelNames: ['kind'],
  }),
  makeCounterProvider({
    name: MM.traceLeases,
    help: 'Trace reads by where their buffer came from (source: reused = a buffer given back earlier, allocated = a new one)',
    labelNames: ['source'],
  }),
];
