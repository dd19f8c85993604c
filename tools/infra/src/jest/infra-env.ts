/** Environment variables through which the global setup hands server addresses to test workers. */
export const INFRA_ENV = {
  natsUrl: 'DEFENDER_TEST_NATS_URL',
  natsVersion: 'DEFENDER_TEST_NATS_VERSION',
  natsUnavailable: 'DEFENDER_TEST_NATS_UNAVAILABLE',
  cassandraUnavailable: 'DEFENDER_TEST_CASSANDRA_UNAVAILABLE',
  /**
   * JSON of the run's nats-server's TestNatsTarget: URL, client TLS files and users with this run's
   * random passwords (no TLS and no users only under `globals.natsPlain`).
   */
  natsTarget: 'DEFENDER_TEST_NATS_TARGET',
  /** JSON of the TestPki whose certificate the run's Cassandra presents over TLS (set only for the harness's own node). */
  cassandraTlsPki: 'DEFENDER_TEST_CASSANDRA_TLS_PKI',
} as const;

/** REQUIRE_INFRA=1 (set by .ci/run): a missing server fails the run instead of skipping. */
export function infraRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['REQUIRE_INFRA'] === '1' || env['REQUIRE_INFRA'] === 'true';
}

export function banner(text: string): string {
  const line = '!'.repeat(Math.min(120, text.length + 8));
  return `\n${line}\n!!! ${text} !!!\n${line}\n`;
}
