import { makeCounterProvider, makeGaugeProvider } from '@willsoto/nestjs-prometheus';

/** The C heap's metrics (memory/malloc-trim.service.ts reports them through DefenderMetricsObserver). */
export const MM = {
  trims: 'defender_malloc_trims_total',
  heap: 'defender_malloc_heap_bytes',
} as const;

export const mallocMetricProviders = [
  makeCounterProvider({ name: MM.trims, help: 'malloc_trim calls (released: whether pages went back to the kernel)', labelNames: ['released'] }),
  makeGaugeProvider({
    name: MM.heap,
    help: 'glibc heap after the last trim, bytes (kind: heap, in_use, free, mmapped)',
    labelNames: ['kind'],
  }),
];
