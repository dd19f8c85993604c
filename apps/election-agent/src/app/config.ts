import { z } from 'zod';
import { commonEnvShape, env } from '@defender/nest-common';

/** A path to a readable PEM file. */
const pemFile = () => env.readableFile();

/** Addresses only this machine can reach: the gRPC server may run there without TLS (and, with ELECTION_DEV_NO_AUTH, without a token). */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  return h === 'localhost' || h === '::1' || h === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Comma-separated shared tokens (more than one while rotating), each at least 16 characters. */
const authTokens = () =>
  z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0),
    )
    .pipe(
      z
        .array(z.string().min(16, 'each token must be at least 16 characters'))
        .min(1, 'must hold at least one token'),
    )
    .optional();

/** The election agent's environment (see apps/election-agent/README.md). */
export const electionAgentEnvSchema = z
  .object({
    ...commonEnvShape(8082),
    /**
     * Interface and port of the gRPC server (election service, grpc.health.v1, reflection). Any
     * address but loopback needs GRPC_TLS_CERT_FILE / GRPC_TLS_KEY_FILE; every address needs
     * ELECTION_AUTH_TOKEN (loopback too: any local process could campaign or resign), unless
     * ELECTION_DEV_NO_AUTH is set on loopback.
     */
    GRPC_HOST: env.optionalString().default('0.0.0.0'),
    GRPC_PORT: env.port(9090),
    POD_NAME: env.optionalString(),
    /** PEM certificate chain and key: serve gRPC over TLS. */
    GRPC_TLS_CERT_FILE: pemFile(),
    GRPC_TLS_KEY_FILE: pemFile(),
    /** PEM CA: additionally require client certificates signed by it (mutual TLS). */
    GRPC_TLS_CA_FILE: pemFile(),
    /** Shared token(s) callers must send as `authorization: Bearer <token>`; required (see ELECTION_DEV_NO_AUTH). */
    ELECTION_AUTH_TOKEN: authTokens(),
    /**
     * Development only: serve without a token, which only a loopback GRPC_HOST allows (every process
     * of the machine may then campaign and resign). The local fab does not use it: it passes a token.
     */
    ELECTION_DEV_NO_AUTH: env.bool(false),
    /** KV bucket with one record per election. */
    ELECTION_KV_BUCKET: env.natsName('elections'),
    /** Values kept per election key (recent terms, for `nats kv history`). */
    ELECTION_KV_HISTORY: env.int(10, 1, 64),
    /** Replicas of the bucket's stream when the agent creates it (3 in a NATS cluster). */
    ELECTION_KV_REPLICAS: env.int(1, 1, 5),
    /** Timeout of one KV request, ms. */
    ELECTION_KV_TIMEOUT_MS: env.int(2000, 100, 30_000),
    /**
     * Bound on the difference between any two agents' clocks, ms: a lease that was not released
     * goes to another candidate only once it has been expired for this long.
     */
    ELECTION_CLOCK_SKEW_MS: env.int(500, 0, 60_000),
    /** How often an observed election is re-read besides the KV watch, ms. */
    ELECTION_OBSERVE_RESYNC_MS: env.int(1000, 100, 60_000),
  })
  .superRefine(
    (c, ctx) => {
      if (c.GRPC_TLS_CERT_FILE !== undefined && c.GRPC_TLS_KEY_FILE === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['GRPC_TLS_CERT_FILE'],
          message: 'needs GRPC_TLS_KEY_FILE as well',
        });
      }
      if (c.GRPC_TLS_KEY_FILE !== undefined && c.GRPC_TLS_CERT_FILE === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['GRPC_TLS_KEY_FILE'],
          message: 'needs GRPC_TLS_CERT_FILE as well',
        });
      }
      if (c.GRPC_TLS_CA_FILE !== undefined && c.GRPC_TLS_CERT_FILE === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['GRPC_TLS_CA_FILE'],
          message: 'mutual TLS needs GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE',
        });
      }
      // Fail closed: a reachable agent without TLS sends tokens in plaintext; an agent without a
      // token lets anyone who reaches it campaign or resign, on loopback every local process.
      const host = c.GRPC_HOST ?? '0.0.0.0';
      const loopback = isLoopbackHost(host);
      const missing = [
        ...(c.GRPC_TLS_CERT_FILE === undefined || c.GRPC_TLS_KEY_FILE === undefined ? ['TLS (GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE)'] : []),
        ...(c.ELECTION_AUTH_TOKEN === undefined ? ['a token (ELECTION_AUTH_TOKEN)'] : []),
      ];
      if (!loopback && missing.length > 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['GRPC_HOST'],
          message: `${host} is not a loopback address: serving gRPC there needs ${missing.join(' and ')}; set them, or bind GRPC_HOST=127.0.0.1`,
        });
      } else if (!loopback && c.ELECTION_DEV_NO_AUTH) {
        ctx.addIssue({ code: 'custom', path: ['ELECTION_DEV_NO_AUTH'], message: `only a loopback GRPC_HOST may serve without a token (${host} is not one)` });
      } else if (loopback && c.ELECTION_AUTH_TOKEN === undefined && !c.ELECTION_DEV_NO_AUTH) {
        ctx.addIssue({
          code: 'custom',
          path: ['ELECTION_AUTH_TOKEN'],
          message: 'is required, also on loopback (any local process could campaign or resign); for development only, ELECTION_DEV_NO_AUTH=true serves a loopback address without one',
        });
      }
    },
    // Also when other variables are invalid, so every problem is reported in one round.
    { when: () => true },
  );

export type ElectionAgentConfig = z.infer<typeof electionAgentEnvSchema>;
