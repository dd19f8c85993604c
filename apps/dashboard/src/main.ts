import 'reflect-metadata';
import { runApp } from '@defender/nest-common';
import { AppModule } from './app/app.module';
import { isOpenPath } from './app/auth/auth';
import { dashboardEnvSchema } from './app/config';

runApp({
  app: 'dashboard',
  apiDescription:
    "The dashboard: the cluster view, chambers with their charts, the alarm feed, live updates (server-sent events), the local fab's buttons, the page itself, health and metrics.",
  // Swagger UI's Authorize button: every path but the open ones needs a token (or the session cookie of /login).
  apiAuth: {
    bearerPaths: (path) => !isOpenPath(path),
    description: 'A DASHBOARD_VIEWER_TOKENS token (reads) or a DASHBOARD_OPERATOR_TOKENS token (also actions). A signed-in browser session works as well.',
  },
  schema: dashboardEnvSchema,
  module: (config) => AppModule.forRoot(config),
  logFields: (config) => (config.POD_NAME ? { pod: config.POD_NAME } : {}),
});
