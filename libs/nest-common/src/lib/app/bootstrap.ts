import { DynamicModule, INestApplication } from '@nestjs/common';
import { z } from 'zod';
import { loadConfigOrExit } from '../config/load-config';
import { createAppLogger, AppLogger } from '../logging/json-logger';
import { apiDocsMismatch, API_DOCS_JSON_PATH, API_DOCS_PATH, servedRoutes, setupApiDocs, type ApiDocsAuth } from './api-docs';
import { createHttpApp, installGracefulShutdown } from './create-http-app';

export interface BootstrapOptions<S extends z.ZodObject<z.ZodRawShape>> {
  /** App name: logs, metrics label, error reports. */
  app: string;
  /** Environment schema; must include LOG_LEVEL, HTTP_HOST and HTTP_PORT (see commonEnvShape). */
  schema: S;
  /** The root module for a validated config. */
  module: (config: z.infer<S>) => DynamicModule;
  /** Fields put on every log line (e.g. the pod name). */
  logFields?: (config: z.infer<S>) => Record<string, unknown>;
  /** What the app's HTTP API is for: the description of its OpenAPI document (`/api/docs`). */
  apiDescription: string;
  /** Which operations need `Authorization: Bearer` in the OpenAPI document (besides those marked `@ApiBearerAuth()`). */
  apiAuth?: ApiDocsAuth;
  /** Runs after the app is created, before it listens (e.g. attach a gRPC microservice). */
  beforeListen?: (app: INestApplication, config: z.infer<S>, logger: AppLogger) => Promise<void>;
}

/**
 * The whole of an app's `main.ts`: validate the environment (exit 2 on any problem, all reported),
 * create the Nest app with JSON logs, install graceful shutdown, listen, log one line.
 */
export async function bootstrap<S extends z.ZodObject<z.ZodRawShape>>(opts: BootstrapOptions<S>): Promise<INestApplication> {
  const config = loadConfigOrExit(opts.app, opts.schema);
  const { LOG_LEVEL, HTTP_PORT, HTTP_HOST } = config as { LOG_LEVEL: 'info'; HTTP_PORT: number; HTTP_HOST: string };
  const logger = createAppLogger(opts.app, LOG_LEVEL, opts.logFields?.(config) ?? {});
  const app = await createHttpApp(opts.module(config), logger);
  installGracefulShutdown(app, logger);
  const document = setupApiDocs(app, `Defender ${opts.app}`, opts.apiDescription, 'v1', opts.apiAuth);
  await opts.beforeListen?.(app, config, logger);
  await app.listen(HTTP_PORT, HTTP_HOST);
  // The document against the routes the app actually serves: a route without documentation (or a
  // documented one that is not served) is a defect the app's contract test reads from this line.
  const mismatch = apiDocsMismatch(document, servedRoutes(app));
  const docs = { page: `/${API_DOCS_PATH}`, json: `/${API_DOCS_JSON_PATH}`, operations: Object.keys(document.paths).length, ...mismatch };
  if (mismatch.undocumented.length > 0 || mismatch.notServed.length > 0) logger.warn({ apiDocs: docs }, 'API documentation does not match the routes');
  logger.info({ url: await app.getUrl(), apiDocs: docs }, `${opts.app} listening`);
  return app;
}

/** Runs {@link bootstrap}; a startup failure is logged as one JSON line and exits 1. */
export function runApp<S extends z.ZodObject<z.ZodRawShape>>(opts: BootstrapOptions<S>): void {
  bootstrap(opts).catch((err: unknown) => {
    process.stderr.write(
      JSON.stringify({
        level: 'fatal',
        time: new Date().toISOString(),
        app: opts.app,
        msg: 'startup failed',
        err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err),
      }) + '\n',
    );
    process.exit(1);
  });
}
