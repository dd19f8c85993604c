import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ElectionClientOptions } from './election-client';

const HOST_PORT = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;
const TARGET = /^(?:dns|ipv4|ipv6|unix|unix-abstract):\S+$/;

/**
 * ELECTION_AGENT_ADDR: comma-separated agent addresses (`host:port`, `[v6]:port`, or a gRPC target
 * such as `dns:///election-agent-headless:9090`); the client fails over between them in order.
 */
export const agentAddressesSchema = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  )
  .pipe(
    z
      .array(
        z
          .string()
          .refine(
            (a) => HOST_PORT.test(a) || TARGET.test(a),
            'each entry must be host:port or a gRPC target (dns:///host:port)',
          ),
      )
      .min(1, 'must name at least one agent'),
  );

const optionalText = z.string().min(1).optional();

/**
 * Environment of a process that campaigns through the election agents. Spread into the app's
 * schema: `z.object({ ...commonEnvShape(8080), ...electionClientEnvShape() })`.
 */
export function electionClientEnvShape() {
  return {
    /** Comma-separated agent addresses, tried in turn. */
    ELECTION_AGENT_ADDR: agentAddressesSchema.default(['election-agent:9090']),
    /**
     * Lease TTL in seconds; renewals every TTL/2, step-down after 0.8 x TTL without one. Default 4,
     * not the seeds' 10: a crashed leader is replaced only after its lease ends, so failover is up to
     * TTL + 0.5 s (docs/adr/0003).
     */
    ELECTION_TTL_SECONDS: z.coerce
      .number({ message: 'must be a number of seconds' })
      .min(1, 'must be >= 1 s')
      .max(3600, 'must be <= 3600 s')
      .default(4),
    /** Shared token the agents require (their ELECTION_AUTH_TOKEN). */
    ELECTION_AUTH_TOKEN: optionalText,
    /** PEM CA that signs the agents' certificates: turns TLS on. */
    ELECTION_TLS_CA_FILE: optionalText,
    /** PEM client certificate and key, for agents that require mutual TLS. */
    ELECTION_TLS_CERT_FILE: optionalText,
    ELECTION_TLS_KEY_FILE: optionalText,
    /** Name expected in the agents' certificate when it differs from the address. */
    ELECTION_TLS_SERVER_NAME: optionalText,
  };
}

/** The validated variables of {@link electionClientEnvShape}. */
export interface ElectionClientEnv {
  ELECTION_AGENT_ADDR: string[];
  ELECTION_TTL_SECONDS: number;
  ELECTION_AUTH_TOKEN?: string;
  ELECTION_TLS_CA_FILE?: string;
  ELECTION_TLS_CERT_FILE?: string;
  ELECTION_TLS_KEY_FILE?: string;
  ELECTION_TLS_SERVER_NAME?: string;
}

/**
 * {@link ElectionClientOptions} from validated configuration; reads the TLS files.
 * @throws Error when a TLS file cannot be read, or only one of certificate and key is given.
 */
export function electionClientOptionsFromEnv(
  env: ElectionClientEnv,
  extra: Partial<ElectionClientOptions> = {},
): ElectionClientOptions {
  if ((env.ELECTION_TLS_CERT_FILE === undefined) !== (env.ELECTION_TLS_KEY_FILE === undefined)) {
    throw new Error('ELECTION_TLS_CERT_FILE and ELECTION_TLS_KEY_FILE go together');
  }
  const tlsOn = env.ELECTION_TLS_CA_FILE !== undefined || env.ELECTION_TLS_CERT_FILE !== undefined;
  return {
    addresses: env.ELECTION_AGENT_ADDR,
    authToken: env.ELECTION_AUTH_TOKEN,
    tls: tlsOn
      ? {
          rootCerts: env.ELECTION_TLS_CA_FILE ? readFileSync(env.ELECTION_TLS_CA_FILE) : undefined,
          certChain: env.ELECTION_TLS_CERT_FILE ? readFileSync(env.ELECTION_TLS_CERT_FILE) : undefined,
          privateKey: env.ELECTION_TLS_KEY_FILE ? readFileSync(env.ELECTION_TLS_KEY_FILE) : undefined,
          serverName: env.ELECTION_TLS_SERVER_NAME,
        }
      : undefined,
    ...extra,
  };
}
