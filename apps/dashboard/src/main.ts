import 'reflect-metadata';
import { runApp } from '@defender/nest-common';
import { AppModule } from './app/app.module';
import { dashboardEnvSchema } from './app/config';

runApp({
  app: 'dashboard',
  apiDescription:
    "The dashboard: the cluster view, chambers with their charts, the alarm feed, live updates (server-sent events), the local fab's buttons, the page itself, health and metrics.",
  schema: dashboardEnvSchema,
  module: (config) => AppModule.forRoot(config),
  logFields: (config) => (config.POD_NAME ? { pod: config.POD_NAME } : {}),
});
