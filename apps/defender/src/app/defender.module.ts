import { Module } from '@nestjs/common';
import { createRunEvaluator } from '@defender/pipeline';
import { MallocTrimService } from './memory/malloc-trim.service';
import { ThreadHeapService } from './memory/thread-heap.service';
import { CHAMBER_WORK } from './membership/chamber-work';
import { DefenderIdentity } from './membership/defender-identity';
import { MembershipService, PROCESS_EXIT } from './membership/membership.service';
import { StatusController } from './membership/status.controller';
import { defenderMetricsProviders } from './metrics/defender-metrics-observer';
import { ProcessingController } from './processing/processing.controller';
import { ProcessingService, RUN_EVALUATOR } from './processing/processing.service';

/**
 * The defender's work: membership (stable ID, heartbeats, assignment map, owned chambers) and run
 * processing (one worker per owned chamber). Membership drives processing through CHAMBER_WORK;
 * processing learns who we are from DefenderIdentity.
 */
@Module({
  controllers: [StatusController, ProcessingController],
  providers: [
    DefenderIdentity,
    MembershipService,
    ProcessingService,
    { provide: CHAMBER_WORK, useFactory: (p: ProcessingService) => p.work, inject: [ProcessingService] },
    { provide: RUN_EVALUATOR, useFactory: () => createRunEvaluator() },
    { provide: PROCESS_EXIT, useValue: (code: number) => setImmediate(() => process.exit(code)) },
    // Every metric, and DefenderMetricsObserver: the one provider that moves them.
    ...defenderMetricsProviders,
    MallocTrimService,
    ThreadHeapService,
  ],
})
export class DefenderModule {}
