import { cassandraFromEnv } from '../cassandra';
import { banner, infraRequired, INFRA_ENV } from './infra-env';

type Server = 'nats' | 'cassandra';

function unavailableReason(server: Server): string | null {
  if (server === 'nats') {
    if (process.env[INFRA_ENV.natsUrl]) return null;
    return process.env[INFRA_ENV.natsUnavailable] ?? "no nats-server: add 'nats' to globals.infra in this project's jest.config.ts";
  }
  if (cassandraFromEnv()) return null;
  return (
    process.env[INFRA_ENV.cassandraUnavailable] ??
    "no Cassandra: add 'cassandra' to globals.infra in this project's jest.config.ts or set CASSANDRA_HOSTS"
  );
}

/**
 * `describe` for tests that need real servers. When one is missing the block is skipped with a loud
 * line naming it, or, under REQUIRE_INFRA=1, the suite fails.
 */
export function describeWithInfra(servers: Server[], name: string, fn: () => void): void {
  const missing = servers.map((s) => [s, unavailableReason(s)] as const).filter(([, r]) => r !== null);
  if (missing.length === 0) {
    describe(name, fn);
    return;
  }
  const text = missing.map(([s, r]) => `${s}: ${r}`).join('; ');
  if (infraRequired()) {
    describe(name, () => {
      it('has the real servers it needs (REQUIRE_INFRA=1)', () => {
        throw new Error(`required infrastructure missing: ${text}`);
      });
    });
    return;
  }
  process.stderr.write(banner(`SKIPPED "${name}": ${text}`));
  describe.skip(name, fn);
}

/** URL of the run's shared nats-server (throws when there is none). */
export function testNatsUrl(): string {
  const url = process.env[INFRA_ENV.natsUrl];
  if (!url) throw new Error(`no nats-server for this test run: ${unavailableReason('nats')}`);
  return url;
}

/** Contact points of the run's Cassandra (throws when there is none). */
export function testCassandra(): { contactPoints: string[]; localDataCenter: string } {
  const c = cassandraFromEnv();
  if (!c) throw new Error(`no Cassandra for this test run: ${unavailableReason('cassandra')}`);
  return c;
}
