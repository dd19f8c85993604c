import 'reflect-metadata';
import { runApp } from '@defender/nest-common';
import { AppModule } from './app/app.module';
import { defenderEnvSchema } from './app/config';

runApp({
  app: 'defender',
  apiDescription:
    "A defender (worker): its status and owned chambers, the chambers it processes, its history cache, token-protected profiling, health and metrics.",
  schema: defenderEnvSchema,
  module: (config) => AppModule.forRoot(config),
  logFields: (config) => (config.POD_NAME ? { pod: config.POD_NAME } : {}),
});
