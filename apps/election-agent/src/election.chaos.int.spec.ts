import { performance } from 'node:perf_hooks';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { KvWatchInclude, Kvm } from '@nats-io/kv';
import { describeWithInfra, freePort, spawnTsApp, testNatsConnectOptions, testNatsEnv, testNatsUrl, waitFor } from '@defender/infra-harness';
import {
  DeposedReason,
  ElectionClient,
  LeaderElection,
  leaseRecordSchema,
  LeaseRecord,
} from '@defender/election';
import { seededRandom } from '@defender/hashing';
import { ChaosProxy, ProxyMode } from './testing/chaos-proxy';
import { AgentProcess, Harness } from './testing/cluster';

// The run's nats-server requires mutual TLS (jest.config.ts `natsTls`) and a user: the fixture's (the
// test's bucket has its own name, which the election-agent role may not write).
const harness: Harness = { spawnTsApp, freePort, waitFor, natsEnv: (url) => (url === testNatsUrl() ? testNatsEnv() : {}) };
const SEED = Number(process.env['ELECTION_CHAOS_SEED'] ?? 20_250_601);
const ELECTION = 'chaos';
const TTL_MS = 2_000;
const SKEW_MS = 200;
const CANDIDATES = 8;
const AGENTS = 3;
/** Faults are injected for at least this long, and then until the run covered what it must (see `uncovered`). */
const CHAOS_MS = 30_000;
/** Hang guard of the fault schedule: a run that has not covered everything by then fails. */
const MAX_CHAOS_MS = 150_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Candidate {
  id: string;
  proxies: ChaosProxy[];
  client: ElectionClient;
  election: LeaderElection;
  running: boolean;
}

/**
 * Many candidates campaign through three agent replicas while a seeded schedule cuts, blackholes
 * and half-drops their connections, stops and restarts candidates, and SIGKILLs and restarts
 * agents. Everything is recorded: every KV revision of the election (the ground truth), every lease
 * a candidate was told it holds (candidate, token, acquiredAt, leaseExpiresAt), and, every 10 ms,
 * which candidates consider themselves leader. No two unexpired leases may overlap, and nobody
 * may act as leader outside its own lease.
 */
describeWithInfra(['nats'], 'election-agent: randomized failures (seeded)', () => {
  it(`never has two unexpired leases at once (seed ${SEED})`, async () => {
    const random = seededRandom(SEED);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const bucket = `elections-chaos-${process.pid}`;
    const agents: AgentProcess[] = [];
    const candidates: Candidate[] = [];
    let nc: NatsConnection | undefined;
    let sampler: NodeJS.Timeout | undefined;
    const revisions = new Map<number, LeaseRecord | null>();
    const leases: { candidate: string; token: number; acquiredAtMs: number; leaseExpiresAtMs: number }[] = [];
    const acts: { candidate: string; token: number; at: number }[] = [];
    const changes: { candidate: string; what: 'elected' | DeposedReason; token: number; at: number }[] = [];
    const log: string[] = [];
    const note = (s: string) => log.push(`${Math.round(performance.now())} ${s}`);

    try {
      agents.push(
        ...(await Promise.all(
          Array.from({ length: AGENTS }, () =>
            AgentProcess.start(harness, {
              natsUrl: testNatsUrl(),
              bucket,
              clockSkewMs: SKEW_MS,
              env: { ELECTION_KV_HISTORY: '64' },
            }),
          ),
        )),
      );
      // The ground truth: every revision of the election's key, watched from the start.
      nc = await connect(testNatsConnectOptions());
      const kv = await new Kvm(nc).open(bucket);
      const watch = await kv.watch({ key: ELECTION, include: KvWatchInclude.AllHistory });
      void (async () => {
        for await (const e of watch)
          revisions.set(e.revision, e.operation === 'PUT' ? leaseRecordSchema.parse(e.json()) : null);
      })();

      for (let i = 0; i < CANDIDATES; i++) {
        const id = `cand-${i}`;
        const proxies = await Promise.all(agents.map((a) => ChaosProxy.start(a.grpcPort)));
        // Each candidate starts with a different agent first.
        const order = proxies.map((_, k) => proxies[(k + i) % proxies.length]!);
        const client = new ElectionClient({ addresses: order.map((p) => `127.0.0.1:${p.port}`) });
        const c: Candidate = {
          id,
          proxies,
          client,
          running: false,
          election: new LeaderElection({
            transport: client,
            election: ELECTION,
            candidate: id,
            ttlMs: TTL_MS,
            random: seededRandom(SEED + i + 1),
            onElected: (t) =>
              changes.push({ candidate: id, what: 'elected', token: t.fencingToken, at: Date.now() }),
            onDeposed: (t, reason) =>
              changes.push({ candidate: id, what: reason, token: t.fencingToken, at: Date.now() }),
            onLease: (l) =>
              leases.push({
                candidate: id,
                token: l.fencingToken,
                acquiredAtMs: l.acquiredAtMs,
                leaseExpiresAtMs: l.leaseExpiresAtMs,
              }),
          }),
        };
        candidates.push(c);
      }
      sampler = setInterval(() => {
        for (const c of candidates) {
          const term = c.election.currentTerm();
          if (term) acts.push({ candidate: c.id, token: term.fencingToken, at: Date.now() });
        }
      }, 10);
      for (const c of candidates) {
        c.election.start();
        c.running = true;
      }

      // What the run must have gone through to test anything (the checks at the end): a busy machine
      // gets there later, so the faults go on until it has, rather than for a fixed time.
      const uncovered = (): string[] => {
        const records = [...revisions.values()].filter((r): r is LeaseRecord => r !== null);
        const reasons = new Set(changes.map((c) => c.what));
        return [
          revisions.size > 10 ? '' : 'more than 10 revisions',
          leases.length > 10 ? '' : 'more than 10 leases told',
          acts.length > 200 ? '' : 'more than 200 leader samples',
          Math.max(0, ...records.map((r) => r.token)) >= 5 ? '' : '5 terms',
          new Set(records.map((r) => r.holder)).size >= 3 ? '' : '3 holders',
          reasons.has('renew-deadline') ? '' : "a 'renew-deadline' step-down",
          reasons.has('stopped') ? '' : "a 'stopped' step-down",
        ].filter((m) => m !== '');
      };

      // The schedule: one fault every 200-1200 ms, each healing by itself later.
      const pending: Promise<unknown>[] = [];
      const later = (ms: number, fn: () => Promise<void> | void) => pending.push(sleep(ms).then(fn));
      const leader = () => candidates.find((c) => c.election.isLeader());
      const began = performance.now();
      while (performance.now() < began + CHAOS_MS || uncovered().length > 0) {
        if (performance.now() > began + MAX_CHAOS_MS) {
          throw new Error(`after ${MAX_CHAOS_MS} ms of faults the run still lacks ${uncovered().join(', ')}`);
        }
        await sleep(200 + random() * 1_000);
        const roll = random();
        if (roll < 0.55) {
          // Mostly a partition of the leader from every agent: faults elsewhere rarely change anything.
          const l = leader();
          const whole = l !== undefined && roll < 0.35;
          const c = whole ? l : pick(candidates);
          const mode = pick<ProxyMode>(['reset', 'blackhole', 'blackhole', 'drop-responses']);
          const targets = whole || random() < 0.5 ? c.proxies : [pick(c.proxies)];
          // A whole partition of the leader outlasts its renew deadline; other faults may be short.
          const ms = whole ? 1_800 + random() * 2_200 : 300 + random() * 3_700;
          note(
            `${c.id}${c === l ? ' (leader)' : ''}: ${mode} on ${targets.length} path(s) for ${Math.round(ms)} ms`,
          );
          targets.forEach((p) => p.setMode(mode));
          later(ms, () => targets.forEach((p) => p.setMode('pass')));
        } else if (roll < 0.7) {
          const l = leader();
          const c = l && random() < 0.5 ? l : pick(candidates.filter((x) => x.running));
          c.running = false;
          const ms = 500 + random() * 2_500;
          note(`${c.id}${c === l ? ' (leader)' : ''}: stop for ${Math.round(ms)} ms`);
          const stopped = c.election.stop();
          later(ms, async () => {
            await stopped;
            c.election.start();
            c.running = true;
          });
        } else if (
          roll < 0.8 &&
          agents.filter((a) => a.proc.child.exitCode === null && a.proc.child.signalCode === null).length ===
            AGENTS
        ) {
          const a = pick(agents);
          const ms = 500 + random() * 2_000;
          note(`agent ${a.grpcPort}: SIGKILL, restart after ${Math.round(ms)} ms`);
          await a.kill();
          later(ms, () => a.launch());
        }
      }
      await Promise.all(pending);
      for (const c of candidates) c.proxies.forEach((p) => p.setMode('pass'));
      note(`faults injected for ${Math.round(performance.now() - began)} ms`);
      await waitFor('a leader once the faults have healed', async () => leader() !== undefined, 60_000, 50);
      clearInterval(sampler);
      await Promise.all(candidates.map((c) => c.election.stop()));
      // The last release reaches the watcher.
      const last = await kv.get(ELECTION);
      await waitFor('the watcher at the last revision', async () => last === null || revisions.has(last.revision), 30_000, 20);
      watch.stop();

      // --- The ground truth: every revision of the key, terms in token order. ---
      const revs = [...revisions.keys()].sort((a, b) => a - b);
      expect(revs.length).toBeGreaterThan(10);
      expect(revs).toEqual(Array.from({ length: revs.length }, (_, i) => revs[0]! + i)); // none missed
      interface Term {
        holder: string;
        start: number;
        end: number;
        released: boolean;
        expiries: Set<number>;
      }
      const terms = new Map<number, Term>();
      let lastToken = 0;
      for (const rev of revs) {
        const r = revisions.get(rev)!;
        expect(r).not.toBeNull();
        const t = terms.get(r!.token);
        if (t === undefined) {
          expect(r!.token).toBe(lastToken + 1); // a new term is always the last token + 1
          lastToken = r!.token;
          terms.set(r!.token, {
            holder: r!.holder,
            start: r!.acquiredAtMs,
            end: r!.leaseExpiresAtMs,
            released: r!.released,
            expiries: new Set([r!.leaseExpiresAtMs]),
          });
        } else {
          expect(r!.token).toBe(lastToken); // an older term never comes back
          expect(r!.holder).toBe(t.holder);
          expect(r!.acquiredAtMs).toBe(t.start);
          t.end = r!.leaseExpiresAtMs;
          t.released = r!.released;
          t.expiries.add(r!.leaseExpiresAtMs);
        }
      }
      // No two unexpired leases overlap: a term starts after the previous one was released, or
      // expired for the skew margin.
      for (let token = 2; token <= lastToken; token++) {
        const prev = terms.get(token - 1)!;
        expect(terms.get(token)!.start).toBeGreaterThanOrEqual(prev.end + (prev.released ? 0 : SKEW_MS));
      }

      // --- What the candidates were told: every (candidate, token, acquiredAt, leaseExpiresAt). ---
      expect(leases.length).toBeGreaterThan(10);
      const byToken = new Map<number, { candidate: string; from: number; to: number }>();
      for (const l of leases) {
        const t = terms.get(l.token);
        expect({ token: l.token, holder: t?.holder, start: t?.start }).toEqual({
          token: l.token,
          holder: l.candidate,
          start: l.acquiredAtMs,
        });
        expect(t!.expiries.has(l.leaseExpiresAtMs)).toBe(true);
        const seen = byToken.get(l.token);
        // A released lease ended at its release, not at its last expiry.
        const to = t!.released ? t!.end : Math.max(seen?.to ?? 0, l.leaseExpiresAtMs);
        byToken.set(l.token, { candidate: l.candidate, from: l.acquiredAtMs, to });
      }
      const told = [...byToken.entries()].sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < told.length; i++) {
        expect(told[i]![1].from).toBeGreaterThanOrEqual(told[i - 1]![1].to);
      }

      // --- What they did: every sampled moment of leadership lies inside the sampler's own lease. ---
      expect(acts.length).toBeGreaterThan(200);
      for (const a of acts) {
        const t = terms.get(a.token)!;
        expect({ holder: t.holder, inLease: a.at >= t.start && a.at < t.end }).toEqual({
          holder: a.candidate,
          inLease: true,
        });
      }

      // --- The run was not vacuous. ---
      const reasons = new Set(changes.map((c) => c.what));
      expect(lastToken).toBeGreaterThanOrEqual(5);
      expect(new Set([...terms.values()].map((t) => t.holder)).size).toBeGreaterThanOrEqual(3);
      expect(reasons).toContain('renew-deadline');
      expect(reasons).toContain('stopped');
      note(changes.map((c) => `${c.candidate} ${c.what} #${c.token}`).join('; '));
      process.stderr.write(
        `[election chaos] seed ${SEED}: ${lastToken} terms, ${revs.length} revisions, ${leases.length} leases, ` +
          `${acts.length} leader samples, step-downs: ${[...reasons].join(', ')}\n`,
      );
    } catch (err) {
      process.stderr.write(`[election chaos] seed ${SEED} schedule:\n${log.join('\n')}\n`);
      throw err;
    } finally {
      clearInterval(sampler);
      await Promise.all(candidates.map((c) => c.election.stop()));
      candidates.forEach((c) => c.client.close());
      await Promise.all(candidates.flatMap((c) => c.proxies.map((p) => p.close())));
      await Promise.all(agents.map((a) => a.proc.stop('SIGTERM')));
      await nc?.close();
    }
  }, 360_000);
});
