/** Environment variables through which the global setup hands server addresses to test workers. */
export const INFRA_ENV = {
  natsUrl: 'DEFENDER_TEST_NATS_URL',
  natsVersion: 'DEFENDER_TEST_NATS_VERSION',
  natsUnavailable: 'DEFENDER_TEST_NATS_UNAVAILABLE',
  cassandraUnavailable: 'DEFENDER_TEST_CASSANDRA_UNAVAILABLE',
} as const;

/** REQUIRE_INFRA=1 (set by .ci/run): a missing server fails the run instead of skipping. */
export function infraRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['REQUIRE_INFRA'] === '1' || env['REQUIRE_INFRA'] === 'true';
}

export function banner(text: string): string {
  const line = '!'.repeat(Math.min(120, text.length + 8));
  return `\n${line}\n!!! ${text} !!!\n${line}\n`;
}
