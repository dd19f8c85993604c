import { DynamicModule, Module } from '@nestjs/common';
import { ControllerSettings } from './controller-env';
import { controllerMetricProviders } from './leadership/controller-metrics';
import { LeadershipMetricsObserver } from './leadership/leadership-metrics-observer';
import { LeadershipService } from './leadership/leadership.service';
import { StatusController } from './leadership/status.controller';
import { CONTROLLER_SETTINGS } from './tokens';

/**
 * The assignment controller: campaigns, and while leader runs the trigger state machine and
 * publishes the map. Needs the global ClusterKvService and StoreService (nest-common). Routes:
 * `api/v1/status`, `api/v1/assignments` (mount it under a prefix with Nest's RouterModule when
 * hosted next to other routes, as the defender's embedded mode does).
 *
 * Only one controller deployment may run against a cluster: either the standalone app or the
 * defenders' embedded mode, never both (they would campaign in one election and take turns, but
 * with two configurations).
 */
@Module({})
export class ControllerModule {
  static forRoot(settings: ControllerSettings): DynamicModule {
    return {
      module: ControllerModule,
      controllers: [StatusController],
      global: true,
      providers: [{ provide: CONTROLLER_SETTINGS, useValue: settings }, LeadershipService, LeadershipMetricsObserver, ...controllerMetricProviders],
      exports: [LeadershipService],
    };
  }
}
