import { DynamicModule, Global, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { ClusterKvModule, CommonAppModule, StoreModule, storeConfigFromEnv } from '@defender/nest-common';
import { DashboardConfig } from './config';
import { AUTH_POLICY, DASHBOARD_CONFIG, FAILED_AUTH_LIMITER } from './tokens';
import { AlarmFeedService } from './alarms/alarm-feed.service';
import { ChamberService } from './chambers/chamber.service';
import { ClusterWatcherService } from './cluster/cluster-watcher.service';
import { ApiController } from './web/api.controller';
import { LocalFabController } from './local-fab/local-fab.controller';
import { StaticController } from './web/static.controller';
import { HostGuardMiddleware } from './web/host-guard.middleware';
import { authPolicyFromConfig } from './auth/auth-policy';
import { AuthMiddleware } from './auth/auth.middleware';
import { SessionController } from './auth/session.controller';
import { FailedAuthLimiter } from './auth/failed-auth-limiter';

@Global()
@Module({})
export class AppModule implements NestModule {
  static forRoot(config: DashboardConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CommonAppModule.forRoot('dashboard', config),
        ClusterKvModule.forRoot(config),
        StoreModule.forRoot(storeConfigFromEnv(config, config.POD_NAME ?? `dashboard:${process.pid}`)),
      ],
      controllers: [ApiController, LocalFabController, SessionController, StaticController],
      providers: [{ provide: DASHBOARD_CONFIG, useValue: config }, { provide: AUTH_POLICY, useValue: authPolicyFromConfig(config) }, { provide: FAILED_AUTH_LIMITER, useValue: new FailedAuthLimiter() }, ClusterWatcherService, AlarmFeedService, ChamberService],
      exports: [DASHBOARD_CONFIG],
    };
  }

  /**
   * Every request passes the host and origin guard (DNS rebinding, cross-site POSTs), then
   * authentication and the role check (auth/auth.ts).
   */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(HostGuardMiddleware, AuthMiddleware).forRoutes('{*path}');
  }
}
