import type { ChildProcess } from 'node:child_process';
import { CandidateEvent, jsonLines } from './jsonl';

/** The parts of @defender/infra-harness these helpers use (passed in: only tests may import the harness). */
export interface Harness {
  spawnTsApp(entry: string, env: Record<string, string>): SpawnedProcess;
  freePort(): Promise<number>;
  waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number, intervalMs?: number): Promise<void>;
  /** More NATS variables for a server URL (NATS_TLS_* when the run's server requires TLS). */
  natsEnv?(url: string): Record<string, string>;
}

export interface SpawnedProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(
    signal?: NodeJS.Signals,
    graceMs?: number,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export const AGENT_ENTRY = 'apps/election-agent/src/main.ts';
export const CANDIDATE_ENTRY = 'apps/election-agent/src/testing/candidate.process.ts';

/** One election-agent process on fixed ports, restartable. */
export class AgentProcess {
  proc!: SpawnedProcess;

  private constructor(
    private readonly h: Harness,
    readonly grpcPort: number,
    readonly httpPort: number,
    private readonly env: Record<string, string>,
  ) {}

  static async start(
    h: Harness,
    opts: { natsUrl: string; bucket: string; clockSkewMs?: number; env?: Record<string, string> },
  ): Promise<AgentProcess> {
    const agent = new AgentProcess(h, await h.freePort(), await h.freePort(), {
      NATS_SERVERS: opts.natsUrl,
      ...(h.natsEnv?.(opts.natsUrl) ?? {}),
      ELECTION_KV_BUCKET: opts.bucket,
      ELECTION_CLOCK_SKEW_MS: String(opts.clockSkewMs ?? 200),
      // Tests of the election itself call a loopback agent without a token (development mode); a
      // test that gives a token gets an agent that requires it.
      ...(opts.env?.['ELECTION_AUTH_TOKEN'] ? {} : { ELECTION_DEV_NO_AUTH: 'true' }),
      ...(opts.env ?? {}),
    });
    await agent.launch();
    return agent;
  }

  /** `127.0.0.1:<grpc port>` */
  get address(): string {
    return `127.0.0.1:${this.grpcPort}`;
  }

  /** Starts the process (again, on the same ports) and waits until it is ready. */
  async launch(): Promise<void> {
    this.proc = this.h.spawnTsApp(AGENT_ENTRY, {
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(this.httpPort),
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: String(this.grpcPort),
      ...this.env,
    });
    // From TypeScript source: a cold start compiles the app. CI runs other suites beside this one on
    // 2 cores, and a restart in the chaos test has taken over 30 s there (ECONNREFUSED until then).
    await this.h.waitFor(
      `election-agent on ${this.address} ready`,
      async () => (await this.ready()) === 200,
      90_000,
      100,
    );
  }

  async ready(): Promise<number> {
    if (this.proc.child.exitCode !== null)
      throw new Error(`agent exited: ${this.proc.stderr().slice(-2000)}`);
    return (await fetch(`http://127.0.0.1:${this.httpPort}/health/ready`)).status;
  }

  async metrics(): Promise<string> {
    return (await fetch(`http://127.0.0.1:${this.httpPort}/metrics`)).text();
  }

  async kill(): Promise<void> {
    await this.proc.stop('SIGKILL');
  }
}

/** One candidate process (candidate.process.ts). */
export class CandidateProcess {
  private constructor(
    readonly id: string,
    readonly proc: SpawnedProcess,
  ) {}

  static start(
    h: Harness,
    opts: {
      id: string;
      agents: string[];
      elections: string[];
      ttlSeconds: number;
      actEveryMs?: number;
      env?: Record<string, string>;
    },
  ): CandidateProcess {
    const proc = h.spawnTsApp(CANDIDATE_ENTRY, {
      CANDIDATE_ID: opts.id,
      ELECTION_AGENT_ADDR: opts.agents.join(','),
      ELECTION_NAMES: opts.elections.join(','),
      ELECTION_TTL_SECONDS: String(opts.ttlSeconds),
      ACT_EVERY_MS: String(opts.actEveryMs ?? 0),
      ...(opts.env ?? {}),
    });
    return new CandidateProcess(opts.id, proc);
  }

  events(filter?: Partial<Pick<CandidateEvent, 'event' | 'election'>>): CandidateEvent[] {
    return jsonLines<CandidateEvent>(this.proc.stdout()).filter(
      (e) =>
        (filter?.event === undefined || e.event === filter.event) &&
        (filter?.election === undefined || e.election === filter.election),
    );
  }

  /** Whether the last elected/deposed event for `election` is `elected`. */
  leads(election: string): boolean {
    const changes = this.events({ election }).filter((e) => e.event === 'elected' || e.event === 'deposed');
    return changes.at(-1)?.event === 'elected';
  }
}

/** Everything the candidates did for `election`, merged and ordered by time. */
export function timeline(candidates: CandidateProcess[], election: string): CandidateEvent[] {
  return candidates.flatMap((c) => c.events({ election })).sort((a, b) => a.at - b.at);
}

/**
 * The acting intervals per token from elected/deposed events (an interval still open ends when
 * its process was killed, per `killedAt`, else at `now`), and a description of the first overlap
 * between two different tokens, if any.
 */
export function actingOverlap(
  events: CandidateEvent[],
  killedAt: Record<string, number> = {},
  now = Date.now(),
): string | null {
  const open = new Map<string, { token: number; from: number }>();
  const intervals: { who: string; token: number; from: number; to: number }[] = [];
  for (const e of [...events].sort((a, b) => a.at - b.at)) {
    const o = open.get(e.candidate);
    if (e.event === 'elected') open.set(e.candidate, { token: e.token ?? 0, from: e.at });
    if (e.event === 'deposed' && o !== undefined) {
      intervals.push({ who: e.candidate, token: o.token, from: o.from, to: e.at });
      open.delete(e.candidate);
    }
  }
  for (const [who, o] of open)
    intervals.push({ who, token: o.token, from: o.from, to: killedAt[who] ?? now });
  for (const a of intervals) {
    for (const b of intervals) {
      if (a.token < b.token && a.from < b.to && b.from < a.to) {
        return `${a.who} #${a.token} [${a.from}, ${a.to}) overlaps ${b.who} #${b.token} [${b.from}, ${b.to})`;
      }
    }
  }
  return null;
}
