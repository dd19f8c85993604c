import { z } from 'zod';
import { commonEnvShape, env } from '@defender/nest-common';

/** The election agent's environment (see apps/election-agent/README.md). */
export const electionAgentEnvSchema = z.object({
  ...commonEnvShape(8082),
  /** Interface and port of the gRPC server (election service, grpc.health.v1, reflection). */
  GRPC_HOST: env.optionalString().default('0.0.0.0'),
  GRPC_PORT: env.port(9090),
  POD_NAME: env.optionalString(),
});

export type ElectionAgentConfig = z.infer<typeof electionAgentEnvSchema>;
