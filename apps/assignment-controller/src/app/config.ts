import { z } from 'zod';
import { controllerEnvShape } from '@defender/controller';
import { clusterEnvShape, commonEnvShape, env, storeEnvShape } from '@defender/nest-common';

/** The assignment controller's environment (see apps/assignment-controller/README.md). */
export const controllerEnvSchema = z.object({
  ...commonEnvShape(8081),
  ...clusterEnvShape(),
  ...storeEnvShape(),
  ...controllerEnvShape(),
  /** Kubernetes downward API; the pod name identifies this controller (else host:pid). */
  POD_NAME: env.optionalString(),
  POD_NAMESPACE: env.optionalString(),
});

export type ControllerConfig = z.infer<typeof controllerEnvSchema>;
