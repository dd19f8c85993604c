/**
 * A process that campaigns through the election agents and reports what it does as JSON lines
 * on stdout: `started`, `elected`, `deposed`, `lease` (every lease answer naming it leader),
 * `act` (sampled while `isLeader()` holds, with ACT_EVERY_MS), `error`, `stopped`. Used by the
 * multi-process tests and tools/bench/election.bench.ts; also a minimal example of the client.
 *
 * Env: the client variables of @defender/election (ELECTION_AGENT_ADDR, ELECTION_TTL_SECONDS,
 * ELECTION_AUTH_TOKEN, ELECTION_TLS_*), CANDIDATE_ID, ELECTION_NAMES (comma-separated),
 * ACT_EVERY_MS (0 = off), START_STAGGER_MS (start each election after a random delay up to this,
 * so their renewals are out of phase). SIGTERM: step down, release, exit 0.
 */
import { z } from 'zod';
import { loadConfigOrExit } from '@defender/nest-common';
import {
  ElectionClient,
  electionClientEnvShape,
  electionClientOptionsFromEnv,
  LeaderElection,
} from '@defender/election';

const config = loadConfigOrExit(
  'election-candidate',
  z.object({
    ...electionClientEnvShape(),
    CANDIDATE_ID: z.string().min(1),
    ELECTION_NAMES: z
      .string()
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s.length > 0),
      )
      .pipe(z.array(z.string()).min(1)),
    ACT_EVERY_MS: z.coerce.number().int().min(0).default(0),
    START_STAGGER_MS: z.coerce.number().int().min(0).default(0),
  }),
);

const out = (fields: Record<string, unknown>): void => {
  process.stdout.write(JSON.stringify({ ...fields, candidate: config.CANDIDATE_ID, at: Date.now() }) + '\n');
};

const client = new ElectionClient(electionClientOptionsFromEnv(config));
const elections = config.ELECTION_NAMES.map(
  (election) =>
    new LeaderElection({
      transport: client,
      election,
      candidate: config.CANDIDATE_ID,
      ttlMs: config.ELECTION_TTL_SECONDS * 1000,
      onElected: (t) =>
        out({ event: 'elected', election, token: t.fencingToken, acquiredAtMs: t.acquiredAtMs }),
      onDeposed: (t, reason) => out({ event: 'deposed', election, token: t.fencingToken, reason }),
      onLease: (l) =>
        out({
          event: 'lease',
          election,
          token: l.fencingToken,
          acquiredAtMs: l.acquiredAtMs,
          leaseExpiresAtMs: l.leaseExpiresAtMs,
        }),
      onError: (e) => out({ event: 'error', election, message: e.message }),
    }),
);

const sampler =
  config.ACT_EVERY_MS > 0
    ? setInterval(() => {
        for (const le of elections) {
          const term = le.currentTerm();
          if (term) out({ event: 'act', election: term.election, token: term.fencingToken });
        }
      }, config.ACT_EVERY_MS)
    : undefined;

elections.forEach((le) => {
  if (config.START_STAGGER_MS === 0) le.start();
  else setTimeout(() => le.start(), Math.random() * config.START_STAGGER_MS);
});
out({ event: 'started', agents: config.ELECTION_AGENT_ADDR });

process.once('SIGTERM', () => {
  clearInterval(sampler);
  void Promise.all(elections.map((le) => le.stop())).then(() => {
    client.close();
    out({ event: 'stopped' });
    process.exit(0);
  });
});
