import { startNatsServer, NatsServerHandle } from '../nats';
import { SecuredNatsServer, startSecuredNatsServer, TestNatsTarget } from '../nats-auth';
import { cassandraFromEnv, startCassandra, CassandraHandle } from '../cassandra';
import { makeTestPki, removeTestPki, TestPki } from '../tls';
import { banner, infraRequired, INFRA_ENV } from './infra-env';

interface InfraState {
  /** The run's nats-server: secured (TLS and per-role users), or plaintext under `globals.natsPlain`. */
  nats?: SecuredNatsServer | NatsServerHandle;
  cassandra?: CassandraHandle;
  /** The PKI of the Cassandra node's TLS (removed at teardown). */
  pki?: TestPki;
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
 *
 * The nats-server runs as production does: it requires TLS (a CA made for this run; with
 * `globals.natsTls: 'mutual'` also a client certificate) and a user, one per app role with that
 * role's permissions (deploy/nats/auth.conf) plus an unrestricted fixture user, passwords random per
 * run. `globals.natsPlain: true` opts out (plaintext, no authentication) for a project whose tests
 * are about such a server.
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

  const natsTls = projectConfig.globals?.['natsTls'] ?? 'server';
  if (natsTls !== 'server' && natsTls !== 'mutual') throw new Error(`globals.natsTls must be 'server' or 'mutual', got ${JSON.stringify(natsTls)}`);
  const natsPlain = projectConfig.globals?.['natsPlain'] ?? false;
  if (typeof natsPlain !== 'boolean') throw new Error(`globals.natsPlain must be a boolean, got ${JSON.stringify(natsPlain)}`);
  if (natsPlain && projectConfig.globals?.['natsTls'] !== undefined) throw new Error('globals.natsPlain and globals.natsTls contradict each other');
  if (wanted.has('nats')) {
    try {
      let target: TestNatsTarget;
      if (natsPlain) {
        const plain = await startNatsServer();
        state.nats = plain;
        target = { url: plain.url };
      } else {
        const secured = await startSecuredNatsServer({ tls: natsTls });
        state.nats = secured;
        target = secured.target;
      }
      const server = 'server' in state.nats ? state.nats.server : state.nats;
      process.env[INFRA_ENV.natsUrl] = server.url;
      process.env[INFRA_ENV.natsVersion] = server.version;
      process.env[INFRA_ENV.natsTarget] = JSON.stringify(target);
      const how = natsPlain ? 'plaintext, no authentication (globals.natsPlain)' : `${natsTls} TLS, users ${Object.keys(target.users?.users ?? {}).join(', ')} + fixture`;
      process.stderr.write(`\n[infra] ${project}: nats-server ${server.version} (JetStream, ${how}) at ${server.url}\n`);
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
        // TLS is optional on the node: suites connect in plaintext, TLS tests (testCassandraTls) over TLS.
        state.pki = makeTestPki();
        state.cassandra = await startCassandra({ log: (l) => process.stderr.write(`[infra] ${l}\n`), tls: state.pki });
        process.env[INFRA_ENV.cassandraTlsPki] = JSON.stringify(state.pki);
        process.env['CASSANDRA_HOSTS'] = state.cassandra.contactPoints.join(',');
        process.env['CASSANDRA_LOCAL_DC'] = state.cassandra.localDataCenter;
        process.stderr.write(
          `[infra] ${project}: Cassandra ${state.cassandra.version} at ${state.cassandra.contactPoints.join(',')}\n`,
        );
      } catch (err) {
        if (state.pki) removeTestPki(state.pki);
        state.pki = undefined;
        if (infraRequired()) throw err;
        process.env[INFRA_ENV.cassandraUnavailable] = (err as Error).message;
        process.stderr.write(banner(`CASSANDRA UNAVAILABLE: tests needing Cassandra are SKIPPED (${(err as Error).message})`));
      }
    }
  }
}
