import { DynamicModule, INestApplication, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppLogger, NestJsonLogger } from '../logging/json-logger';

/** Exit code when graceful shutdown did not finish within its deadline. */
export const EXIT_CODE_SHUTDOWN_TIMEOUT = 1;

/**
 * Creates a Nest HTTP application with JSON logging. The caller calls `listen` (tests bind port 0)
 * and then {@link installGracefulShutdown}.
 */
export async function createHttpApp(module: Type<unknown> | DynamicModule, logger: AppLogger): Promise<INestApplication> {
  return NestFactory.create(module, { logger: new NestJsonLogger(logger), abortOnError: false });
}

/**
 * On SIGTERM or SIGINT: closes the app (readiness turns false, `beforeApplicationShutdown` drains
 * in-flight work, `onApplicationShutdown` closes connections), logs `stopped` and exits 0. If that
 * takes longer than `timeoutMs`, or a second signal arrives, exits {@link EXIT_CODE_SHUTDOWN_TIMEOUT}.
 *
 * Used instead of Nest's `enableShutdownHooks()`, which runs the same hooks but then re-raises the
 * signal, so a clean stop could not be told from a kill by the exit status.
 */
export function installGracefulShutdown(app: INestApplication, logger: AppLogger, timeoutMs = 30_000): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal during shutdown: exiting now');
      process.exit(EXIT_CODE_SHUTDOWN_TIMEOUT);
    }
    stopping = true;
    logger.info({ signal, timeoutMs }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out');
      process.exit(EXIT_CODE_SHUTDOWN_TIMEOUT);
    }, timeoutMs);
    timer.unref();
    app
      .close()
      .then(() => {
        logger.info('stopped');
        process.exit(0);
      })
      .catch((err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(EXIT_CODE_SHUTDOWN_TIMEOUT);
      });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
