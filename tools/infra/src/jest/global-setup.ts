import { startNatsServer, NatsServerHandle } from '../nats';
import { cassandraFromEnv, startCassandra, CassandraHandle } from '../cassandra';
import { banner, infraRequired, INFRA_ENV } from './infra-env';

interface InfraState {
  nats?: NatsServerHandle;
  cassandra?: CassandraHandle;
}

declare global {
  // Shared between global setup and teardown (same process).
  var __DEFENDER_INFRA__: InfraState | undefined;
}

/**
 * Jest global setup: starts the real servers a project declares in `globals.infra`
 * (`'nats'`, `'cassandra'`) once per test run and exports their addresses to the test workers
 * through the environment. A server that cannot be started fails the run under REQUIRE_INFRA=1;
 * otherwise its tests are skipped with a loud line naming the server.
 */
export default async function globalSetup(
  _globalConfig: unknown,
  projectConfig: { globals?: Record<string, unknown>; displayName?: { name: string } | string },
): Promise<void> {
  const wanted = new Set((projectConfig.globals?.['infra'] as string[] | undefined) ?? []);
  const project =
    typeof projectConfig.displayName === 'string' ? projectConfig.displayName : (projectConfig.displayName?.name ?? '?');
  const state: InfraState = {};
  globalThis.__DEFENDER_INFRA__ = state;

  if (wanted.has('nats')) {
    try {
      state.nats = await startNatsServer();
      process.env[INFRA_ENV.natsUrl] = state.nats.url;
      process.env[INFRA_ENV.natsVersion] = state.nats.version;
      process.stderr.write(`\n[infra] ${project}: nats-server ${state.nats.version} (JetStream) at ${state.nats.url}\n`);
    } catch (err) {
      if (infraRequired()) throw err;
      process.env[INFRA_ENV.natsUnavailable] = (err as Error).message;
      process.stderr.write(banner(`NATS UNAVAILABLE: tests needing nats-server are SKIPPED (${(err as Error).message})`));
    }
  }

  if (wanted.has('cassandra')) {
    const external = cassandraFromEnv();
    if (external) {
      process.stderr.write(`[infra] ${project}: using Cassandra at ${external.contactPoints.join(',')} (CASSANDRA_HOSTS)\n`);
    } else {
      try {
        state.cassandra = await startCassandra({ log: (l) => process.stderr.write(`[infra] ${l}\n`) });
        process.env['CASSANDRA_HOSTS'] = state.cassandra.contactPoints.join(',');
        process.env['CASSANDRA_LOCAL_DC'] = state.cassandra.localDataCenter;
        process.stderr.write(
          `[infra] ${project}: Cassandra ${state.cassandra.version} at ${state.cassandra.contactPoints.join(',')}\n`,
        );
      } catch (err) {
        if (infraRequired()) throw err;
        process.env[INFRA_ENV.cassandraUnavailable] = (err as Error).message;
        process.stderr.write(banner(`CASSANDRA UNAVAILABLE: tests needing Cassandra are SKIPPED (${(err as Error).message})`));
      }
    }
  }
}
