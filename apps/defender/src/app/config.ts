import { z } from 'zod';
import { commonEnvShape, env } from '@defender/nest-common';

/** The defender's environment (see apps/defender/README.md). */
export const defenderEnvSchema = z.object({
  ...commonEnvShape(8080),
  /** Kubernetes downward API; used to name the NATS connection and in logs. */
  POD_NAME: env.optionalString(),
  POD_UID: env.optionalString(),
  POD_NAMESPACE: env.optionalString(),
});

export type DefenderConfig = z.infer<typeof defenderEnvSchema>;
