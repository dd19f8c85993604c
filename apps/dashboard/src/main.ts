import 'reflect-metadata';
import { runApp } from '@defender/nest-common';
import { AppModule } from './app/app.module';
import { dashboardEnvSchema } from './app/config';

runApp({
  app: 'dashboard',
  schema: dashboardEnvSchema,
  module: (config) => AppModule.forRoot(config),
  logFields: (config) => (config.POD_NAME ? { pod: config.POD_NAME } : {}),
});
