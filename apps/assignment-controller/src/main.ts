import 'reflect-metadata';
import { runApp } from '@defender/nest-common';
import { AppModule } from './app/app.module';
import { controllerEnvSchema } from './app/config';

runApp({
  app: 'assignment-controller',
  apiDescription:
    "The assignment controller: its status (leader or standby, cluster state, pending trigger), the published assignment map, health and metrics.",
  schema: controllerEnvSchema,
  module: (config) => AppModule.forRoot(config),
  logFields: (config) => (config.POD_NAME ? { pod: config.POD_NAME } : {}),
});
