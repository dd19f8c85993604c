import { cassandraFromEnv } from '../cassandra';
import { natsAppEnvFor, natsConnectOptionsFor, type TestNatsConnectOptions, type TestNatsTarget } from '../nats-auth';
import type { TestPki } from '../tls';
import { banner, infraRequired, INFRA_ENV } from './infra-env';

/** `cassandra-tls`: the run's Cassandra also serves TLS (the harness's own node, not an external CASSANDRA_HOSTS cluster). */
type Server = 'nats' | 'cassandra' | 'cassandra-tls';

function unavailableReason(server: Server): string | null {
  if (server === 'nats') {
    if (process.env[INFRA_ENV.natsUrl]) return null;
    return process.env[INFRA_ENV.natsUnavailable] ?? "no nats-server: add 'nats' to globals.infra in this project's jest.config.ts";
  }
  if (server === 'cassandra-tls') {
    if (process.env[INFRA_ENV.cassandraTlsPki]) return null;
    return unavailableReason('cassandra') ?? 'Cassandra TLS: only the node the harness starts serves TLS (CASSANDRA_HOSTS names an external cluster)';
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

/** How to reach the run's nats-server: URL, client TLS, users (throws when there is none). */
export function testNatsTarget(): TestNatsTarget {
  const json = process.env[INFRA_ENV.natsTarget];
  if (!json) throw new Error(`no nats-server for this test run: ${unavailableReason('nats') ?? `${INFRA_ENV.natsTarget} unset`}`);
  return JSON.parse(json) as TestNatsTarget;
}

/**
 * `connect()` options for the run's nats-server: its URL, its TLS, and a user: `role`'s (its
 * permissions only; libs/nats-kv permissions.ts), or without a role the fixture's (unrestricted: for
 * tests that set up fixtures, play several roles, or use buckets named for one test, which no role
 * may write). Throws for an unknown role.
 */
export function testNatsConnectOptions(role?: string): TestNatsConnectOptions {
  return natsConnectOptionsFor(testNatsTarget(), role);
}

/**
 * An app's NATS variables for the run's nats-server: NATS_SERVERS, NATS_TLS_*, and NATS_USER /
 * NATS_PASSWORD of `role` (or, without a role, of the fixture; see {@link testNatsConnectOptions}).
 */
export function testNatsEnv(role?: string): Record<string, string> {
  return natsAppEnvFor(testNatsTarget(), role);
}

/** Contact points of the run's Cassandra (throws when there is none). */
export function testCassandra(): { contactPoints: string[]; localDataCenter: string } {
  const c = cassandraFromEnv();
  if (!c) throw new Error(`no Cassandra for this test run: ${unavailableReason('cassandra')}`);
  return c;
}

/** The PKI of the run's Cassandra TLS: its CA verifies the node (throws when the node serves no TLS). */
export function testCassandraTls(): TestPki {
  const json = process.env[INFRA_ENV.cassandraTlsPki];
  if (!json) throw new Error(`no Cassandra TLS for this test run: ${unavailableReason('cassandra-tls')}`);
  return JSON.parse(json) as TestPki;
}
