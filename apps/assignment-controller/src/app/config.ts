import { z } from 'zod';
import { commonEnvShape, env } from '@defender/nest-common';

/** The assignment controller's environment (see apps/assignment-controller/README.md). */
export const controllerEnvSchema = z.object({
  ...commonEnvShape(8081),
  /** Kubernetes downward API; names the NATS connection and appears in logs. */
  POD_NAME: env.optionalString(),
  POD_NAMESPACE: env.optionalString(),
});

export type ControllerConfig = z.infer<typeof controllerEnvSchema>;
