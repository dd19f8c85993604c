import { DynamicModule, INestApplication } from '@nestjs/common';
import { z } from 'zod';
import { loadConfigOrExit } from '../config/load-config';
import { createAppLogger, AppLogger } from '../logging/json-logger';
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
  await opts.beforeListen?.(app, config, logger);
  await app.listen(HTTP_PORT, HTTP_HOST);
  logger.info({ url: await app.getUrl() }, `${opts.app} listening`);
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
