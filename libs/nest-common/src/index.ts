export { ConfigValidationError } from './lib/config/config-error';
export type { ConfigProblem } from './lib/config/config-error';
export {
  EXIT_CODE_BAD_CONFIG,
  credentialProblems,
  loadConfig,
  loadConfigOrExit,
} from './lib/config/load-config';
export type { ExitHooks } from './lib/config/load-config';
export { env, isReadableFile } from './lib/config/env-fields';
export { commonEnvShape } from './lib/config/common-env';
export { NestJsonLogger, createAppLogger } from './lib/logging/json-logger';
export type { AppLogger } from './lib/logging/json-logger';
export { HealthRegistry } from './lib/health/health.registry';
export type { CheckResult, ReadinessCheck, ReadinessReport } from './lib/health/health.registry';
export { HealthModule } from './lib/health/health.module';
export { MetricsController, MetricsModule } from './lib/metrics/metrics.module';
export { NATS_OPTIONS, NatsConnectionService } from './lib/nats/nats-connection.service';
export type { NatsModuleOptions } from './lib/nats/nats-connection.service';
export { NatsModule } from './lib/nats/nats.module';
export { natsClientTls, natsTlsFromEnv, natsTlsMode } from './lib/nats/nats-tls';
export type { NatsTlsEnv, NatsTlsFiles } from './lib/nats/nats-tls';
export {
  EXIT_CODE_SHUTDOWN_TIMEOUT,
  createHttpApp,
  installGracefulShutdown,
} from './lib/app/create-http-app';
export { bootstrap, runApp } from './lib/app/bootstrap';
export type { BootstrapOptions } from './lib/app/bootstrap';
export {
  API_DOCS_JSON_PATH,
  API_DOCS_PATH,
  apiDocsMismatch,
  BEARER_SCHEME,
  buildApiDocument,
  documentedRoutes,
  openApiPath,
  servedRoutes,
  setupApiDocs,
  undefinedSecuritySchemes,
} from './lib/app/api-docs';
export type { ApiDocsAuth, RouteKey } from './lib/app/api-docs';
export { CommonAppModule } from './lib/app/common-app.module';
export type { CommonAppConfig } from './lib/app/common-app.module';
export { clusterEnvShape } from './lib/cluster/cluster-env';
export { CLUSTER_KV_OPTIONS, ClusterKvService } from './lib/cluster/cluster-kv.service';
export type { ClusterBuckets, ClusterKvOptions } from './lib/cluster/cluster-kv.service';
export { ClusterKvModule } from './lib/cluster/cluster-kv.module';
export { storeConfigFromEnv, storeEnvShape } from './lib/store/store-env';
export type { StoreEnv, StoreTuning } from './lib/store/store-env';
export { EXIT_STORE_FAILED, STORE_CONFIG, StoreService } from './lib/store/store.service';
export { StoreModule } from './lib/store/store.module';
