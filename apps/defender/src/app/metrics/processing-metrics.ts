import { makeCounterProvider, makeGaugeProvider, makeHistogramProvider } from '@willsoto/nestjs-prometheus';

/** Processing metrics (seed 000 names, plus dead letters and fencing). */
export const PM = {
  received: 'defender_messages_received_total',
  processed: 'defender_messages_processed_total',
  failed: 'defender_messages_failed_total',
  deadLetters: 'defender_dead_letters_total',
  processTime: 'defender_process_time_seconds',
  cacheHitRate: 'defender_cache_hit_rate',
  cacheHits: 'defender_cache_hits_total',
  cacheMisses: 'defender_cache_misses_total',
  storeRead: 'defender_cassandra_read_duration_seconds',
  storeWrite: 'defender_cassandra_write_duration_seconds',
  uchartCalc: 'defender_uchart_calculation_duration_seconds',
  alarms: 'defender_alarms_total',
  fenced: 'defender_fenced_writes_total',
  paused: 'defender_processing_paused_total',
  inflight: 'defender_inflight_runs',
  storeOperation: 'defender_store_operation_duration_seconds',
  streamMismatch: 'defender_store_stream_mismatch',
  streamRebased: 'defender_stream_rebased_total',
  streamMissing: 'defender_stream_missing',
  chamberRuns: 'defender_chamber_runs_total',
  chamberAlarms: 'defender_chamber_alarms_total',
  strategyLookups: 'defender_strategy_lookups_total',
} as const;

const LATENCY = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const processingMetricProviders = [
  makeCounterProvider({ name: PM.received, help: 'Notifications taken for processing' }),
  makeCounterProvider({ name: PM.processed, help: 'Runs handled by outcome: applied, already-applied (a replay at its own sequence), duplicate-run (its run id applied before: skipped)', labelNames: ['outcome'] }),
  makeCounterProvider({ name: PM.failed, help: 'Failed processing attempts (retried)' }),
  makeCounterProvider({ name: PM.deadLetters, help: 'Notifications sent to dc.dead.<reason>', labelNames: ['reason'] }),
  makeHistogramProvider({ name: PM.processTime, help: 'Notification read to commit and publish, seconds', buckets: LATENCY }),
  makeGaugeProvider({ name: PM.cacheHitRate, help: 'U-chart history cache hit rate (0-1)' }),
  makeCounterProvider({ name: PM.cacheHits, help: 'U-chart history lookups answered by the cache' }),
  makeCounterProvider({ name: PM.cacheMisses, help: 'U-chart history lookups read from the store' }),
  makeHistogramProvider({ name: PM.storeRead, help: 'Store reads (history, trace), seconds; named as in the seeds for either backend', buckets: LATENCY }),
  makeHistogramProvider({ name: PM.storeWrite, help: 'Store commits, seconds; named as in the seeds for either backend', buckets: LATENCY }),
  makeHistogramProvider({ name: PM.uchartCalc, help: 'Indicator computation and rule evaluation, seconds', buckets: LATENCY }),
  makeCounterProvider({ name: PM.alarms, help: 'Alarms published' }),
  makeCounterProvider({ name: PM.fenced, help: 'Chambers stopped because a newer owner fenced our writes' }),
  makeCounterProvider({ name: PM.paused, help: 'Pauses because NATS or the store was unavailable', labelNames: ['stage'] }),
  makeGaugeProvider({ name: PM.inflight, help: 'Runs being processed now' }),
  makeGaugeProvider({
    name: PM.streamMismatch,
    help: 'Chambers paused because the notification stream is not the one their high-water mark was recorded with (recreated): 1 per chamber while paused; chamber="" counts them (ADR 0007)',
    labelNames: ['chamber'],
  }),
  makeCounterProvider({ name: PM.streamRebased, help: 'Chambers re-based onto a recreated notification stream (ADR 0007)' }),
  makeGaugeProvider({ name: PM.streamMissing, help: '1 while the notification stream does not exist (NATS lost it); this defender recreates it' }),
  // Per chamber (one series pair per chamber the defender has owned): its alarm rate against the budget.
  makeCounterProvider({ name: PM.chamberRuns, help: 'Runs applied, per chamber', labelNames: ['chamber'] }),
  makeCounterProvider({ name: PM.chamberAlarms, help: 'Run alarms published, per chamber (one per alarmed run)', labelNames: ['chamber'] }),
  makeCounterProvider({
    name: PM.strategyLookups,
    help:
      'Strategy lookups of run attempts by the scope that holds the strategy judging them: chamber_recipe, chamber, ' +
      'legacy_key (the deprecated <tool>:<chamber> key: store it under chamber/<tool>:<chamber>), recipe, default, builtin (none stored)',
    labelNames: ['scope'],
  }),
  makeHistogramProvider({
    name: PM.storeOperation,
    help: 'Every store operation by repository method (e.g. chamberState.commitRun), seconds',
    labelNames: ['operation', 'outcome'],
    buckets: [0.001, 0.0025, ...LATENCY],
  }),
];
