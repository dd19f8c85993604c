import { accessSync, constants, statSync } from 'node:fs';
import { z } from 'zod';

/** True when `path` is a regular file this process may read. */
export function isReadableFile(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Reusable field parsers for environment variables. Every value arrives as a string; these coerce
 * and bound it, with messages that name the expected form.
 */
export const env = {
  /** TCP port, 1..65535 (0 allowed when `allowEphemeral`, for tests that let the OS choose). */
  port: (def: number, allowEphemeral = true) =>
    z.coerce
      .number({ message: 'must be a port number' })
      .int('must be an integer')
      .min(allowEphemeral ? 0 : 1, `must be ${allowEphemeral ? 0 : 1}..65535`)
      .max(65535, 'must be <= 65535')
      .default(def),

  /** Positive integer with bounds. */
  int: (def: number, min: number, max: number) =>
    z.coerce
      .number({ message: 'must be a number' })
      .int('must be an integer')
      .min(min, `must be >= ${min}`)
      .max(max, `must be <= ${max}`)
      .default(def),

  /** A duration in seconds (fractional allowed), bounded. */
  seconds: (def: number, min: number, max: number) =>
    z.coerce
      .number({ message: 'must be a number of seconds' })
      .min(min, `must be >= ${min} s`)
      .max(max, `must be <= ${max} s`)
      .default(def),

  /** "true"/"false"/"1"/"0"/"yes"/"no". */
  bool: (def: boolean) =>
    z
      .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
      .transform((v) => v === 'true' || v === '1' || v === 'yes')
      .default(def),

  logLevel: () =>
    z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
        message: 'must be one of fatal, error, warn, info, debug, trace, silent',
      })
      .default('info'),

  /** Comma-separated NATS URLs (`nats://host:port` or `host:port`). */
  natsServers: (def: string) =>
    z
      .string()
      .default(def)
      .transform((v) => v.split(',').map((s) => s.trim()).filter((s) => s.length > 0))
      .pipe(
        z
          .array(
            z.string().regex(/^((nats|tls|ws|wss):\/\/)?[^\s:/,]+(:\d{1,5})?$/, 'each entry must look like nats://host:port'),
          )
          .min(1, 'must name at least one server'),
      ),

  /**
   * An optional path to a readable file (certificates, keys), checked at startup so a missing
   * mount fails the start instead of the first connection. The message names the problem without
   * the file's contents.
   */
  readableFile: () => z.string().min(1).refine(isReadableFile, 'must be a readable file (missing, not a file, or no permission)').optional(),

  /** A non-empty optional string (secrets, names). */
  optionalString: () => z.string().min(1).optional(),

  /** A name usable in NATS subjects and KV bucket names. */
  natsName: (def: string) =>
    z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/, 'may contain only letters, digits, "-" and "_"')
      .default(def),
};
