import { LoggerService, LogLevel } from '@nestjs/common';
import pino, { Logger, LevelWithSilent } from 'pino';

export type AppLogger = Logger;

/**
 * Creates the process-wide pino logger: one JSON object per line on stdout with `app` and any
 * `base` fields (e.g. `defenderId`) on every line.
 */
export function createAppLogger(
  app: string,
  level: LevelWithSilent = 'info',
  base: Record<string, unknown> = {},
  destination?: pino.DestinationStream,
): AppLogger {
  return pino(
    {
      level,
      base: { app, pid: process.pid, ...base },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ fd: 1, sync: true }),
  );
}

/** Adapts pino to Nest's LoggerService so framework messages are JSON too. */
export class NestJsonLogger implements LoggerService {
  constructor(private readonly logger: AppLogger) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('trace', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }
  setLogLevels(_levels: LogLevel[]): void {
    // The level is owned by LOG_LEVEL (pino); Nest's own level list is not used.
  }

  private write(level: 'info' | 'error' | 'warn' | 'debug' | 'trace' | 'fatal', message: unknown, rest: unknown[]): void {
    // Nest passes the context (class name) as the last string argument, and for errors a stack before it.
    const args = [...rest];
    const context = typeof args[args.length - 1] === 'string' ? (args.pop() as string) : undefined;
    const fields: Record<string, unknown> = {};
    if (context) fields['context'] = context;
    if (level === 'error' && typeof args[0] === 'string' && args[0].includes('\n')) fields['stack'] = args.shift();
    if (args.length > 0) fields['details'] = args;
    if (message instanceof Error) {
      this.logger[level]({ ...fields, err: message }, message.message);
    } else if (typeof message === 'object' && message !== null) {
      this.logger[level]({ ...fields, ...(message as Record<string, unknown>) });
    } else {
      this.logger[level](fields, String(message));
    }
  }
}
