import { removeTestPki } from '../tls';

/** Jest global teardown: stops the servers the global setup started. */
export default async function globalTeardown(): Promise<void> {
  const state = globalThis.__DEFENDER_INFRA__;
  if (!state) return;
  await Promise.all([state.nats?.stop(), state.cassandra?.stop()]);
  if (state.pki) removeTestPki(state.pki);
  globalThis.__DEFENDER_INFRA__ = undefined;
}
