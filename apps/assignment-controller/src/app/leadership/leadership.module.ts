import { Module } from '@nestjs/common';
import { controllerMetricProviders } from './controller-metrics';
import { LeadershipService } from './leadership.service';
import { StatusController } from './status.controller';

@Module({
  controllers: [StatusController],
  providers: [LeadershipService, ...controllerMetricProviders],
  exports: [LeadershipService],
})
export class LeadershipModule {}
