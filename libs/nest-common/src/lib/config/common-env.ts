import { env } from './env-fields';

/**
 * Variables every Defender app reads. Spread into an app's schema:
 * `z.object({ ...commonEnvShape(8080), GRPC_PORT: env.port(9090) })`.
 */
export function commonEnvShape(defaultHttpPort: number) {
  return {
    /** fatal | error | warn | info | debug | trace | silent */
    LOG_LEVEL: env.logLevel(),
    /** Interface for the HTTP server (health, metrics, API). */
    HTTP_HOST: env.optionalString().default('0.0.0.0'),
    HTTP_PORT: env.port(defaultHttpPort),
    /** Comma-separated NATS URLs. */
    NATS_SERVERS: env.natsServers('nats://127.0.0.1:4222'),
    NATS_USER: env.optionalString(),
    NATS_PASSWORD: env.optionalString(),
    NATS_TOKEN: env.optionalString(),
    /** PEM CA the NATS servers' certificates must chain to: connect over TLS and verify the server. */
    NATS_TLS_CA_FILE: env.readableFile(),
    /** PEM client certificate and key (both or neither): mutual TLS, for servers that verify clients. */
    NATS_TLS_CERT_FILE: env.readableFile(),
    NATS_TLS_KEY_FILE: env.readableFile(),
  };
}
