/**
 * fab-sim: a simulated fab for Defender. `node -r ./tools/scripts/register.js tools/fab-sim/src/main.ts --help`
 * See tools/fab-sim/README.md and docs/local-fab.md.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { natsInboxPrefix } from '@defender/nats-kv';
import type { DefenderStore } from '@defender/contracts';
import { DEFAULT_STRATEGY } from '@defender/defense-rules';
import { openStore, type StoreConfig } from '@defender/store';
import { parseCli, UsageError, USAGE, type CliOptions } from './lib/cli-options';
import { planExcursions } from './lib/excursions';
import { generateFab, type FabSpec } from './lib/fab';
import { fabOverview, num, ProgressRenderer, summaryText } from './lib/report';
import { seedChambers, Simulator } from './lib/simulator';

const REPO = join(__dirname, '..', '..', '..');

function storeConfig(o: CliOptions): StoreConfig {
  if (o.store === 'sqlite') return { kind: 'sqlite', sqlite: { filename: resolve(o.sqlitePath) } };
  return {
    kind: 'cassandra',
    cassandra: {
      contactPoints: o.cassandraHosts,
      localDataCenter: o.cassandraDc,
      keyspace: o.cassandraKeyspace,
      consistency: 'QUORUM',
      replication: { class: 'SimpleStrategy', replication_factor: 1 },
      migrationOwner: `fab-sim:${process.pid}`,
      ...(o.cassandraTls ? { tls: o.cassandraTls } : {}),
    },
  } as StoreConfig;
}

async function openStoreFor(o: CliOptions): Promise<DefenderStore> {
  if (o.store === 'sqlite') mkdirSync(dirname(resolve(o.sqlitePath)), { recursive: true });
  return openStore(storeConfig(o));
}

function describeFab(fab: FabSpec, json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(fab, null, 2) + '\n');
    return;
  }
  process.stdout.write(fabOverview(fab) + '\n\n');
  process.stdout.write('chamber          type     svids  Hz  context  weight     recipe (steps)                          sensors\n');
  for (const c of fab.chambers) {
    process.stdout.write(
      `${c.key.padEnd(16)} ${c.toolType.padEnd(8)} ${String(c.svidCount).padStart(5)} ${String(c.collectionFreqHz).padStart(3)} ${String(c.contextDurationSeconds).padStart(6)}s ${num(c.weight).padStart(10)}  ` +
        `${`${c.recipe.name} (${c.recipe.steps.map((s) => s.name).join('/')})`.padEnd(40)} ${c.sensors.map((s) => s.name).join(', ')}\n`,
    );
  }
}

async function main(argv: string[]): Promise<number> {
  const o = parseCli(argv, process.env);
  const fab = generateFab({ tools: o.tools, seed: o.seed, profile: o.profile, ...(o.sensors ? { sensorsPerChamber: o.sensors } : {}) });
  if (o.command === 'describe') {
    describeFab(fab, o.json);
    return 0;
  }
  const storeLabel = o.store === 'sqlite' ? `sqlite ${resolve(o.sqlitePath)}` : `cassandra ${o.cassandraHosts.join(',')}/${o.cassandraKeyspace}`;
  const store = await openStoreFor(o);
  try {
    if (o.command === 'seed' || o.writeMetadata) {
      await seedChambers(store, fab);
      process.stderr.write(`${fabOverview(fab)}\nfab-sim: ${num(fab.chambers.length)} chambers written to chamber_metadata (${storeLabel})\n`);
    }
    if (o.command === 'seed') return 0;

    const session = o.session ?? `s${Date.now().toString(36).slice(-5)}${randomBytes(2).toString('hex')}`;
    const count = Math.min(fab.chambers.length, o.excursions ?? Math.max(4, Math.round(fab.chambers.length * 0.2)));
    const excursions = planExcursions(fab, { count, kinds: o.kinds, sizes: o.sizes, afterRun: o.excursionAfter, runsPerChamber: o.runs, seed: o.seed });
    if (excursions.length < count) {
      process.stderr.write(`fab-sim: only ${excursions.length} of ${count} excursions fit (--runs ${o.runs} leaves too few runs after --excursion-after ${o.excursionAfter})\n`);
    }
    const phaseOne = DEFAULT_STRATEGY.monitor?.baseline.minRuns ?? 0;
    if (o.excursionAfter < o.warmupRuns || o.excursionAfter < phaseOne) {
      process.stderr.write(`fab-sim: note: excursions may start at run ${o.excursionAfter + 1}, before Phase I (${phaseOne} runs) has frozen the limits\n`);
    }
    const out = resolve(o.out ?? join(REPO, 'tmp', 'fab-sim', session));
    const nc = await connect({ servers: o.nats, name: `fab-sim:${session}`, maxReconnectAttempts: -1, reconnectTimeWait: 250, ...(o.natsCredentials ?? {}), ...(o.natsCredentials ? { inboxPrefix: natsInboxPrefix(o.natsCredentials.user) } : {}), ...(o.natsTls ? { tls: { ...o.natsTls } } : {}) });
    const mode = o.progress === 'auto' ? (process.stderr.isTTY ? 'bar' : 'plain') : o.progress;
    const renderer = new ProgressRenderer(process.stderr, mode);
    const log = (line: string) => process.stderr.write(`${mode === 'bar' ? '\r\x1b[2K' : ''}${line}\n`);
    const abort = new AbortController();
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      signals++;
      if (signals > 1) process.exit(130);
      log(`fab-sim: ${sig}: stopping; the summary covers the runs published so far (again to quit at once)`);
      abort.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    log(
      `fab-sim: session ${session}: ${num(fab.chambers.length * o.runs)} runs (${o.runs} per chamber; the first ${o.warmupRuns} at full speed, then ${o.speed === 'max' ? 'as fast as possible' : `${o.speed}x real time`}), ` +
        `${excursions.length} excursions from run ${o.excursionAfter + 1}; NATS ${o.nats.join(',')}, store ${storeLabel}`,
    );
    try {
      const sim = new Simulator(
        {
          fab,
          runsPerChamber: o.runs,
          warmupRuns: o.warmupRuns,
          speed: o.speed,
          excursions,
          sessionId: session,
          outDir: out,
          keepTraces: o.keepTraces,
          concurrency: o.concurrency,
          maxBacklog: o.maxBacklog,
          settleTimeoutMs: o.settleTimeoutSeconds * 1000,
          // The chambers run the default strategy: its Phase I runs are never judged.
          phaseOneRuns: DEFAULT_STRATEGY.monitor?.baseline.minRuns ?? 0,
          graceRuns: 3,
        },
        { store, nc, log, onProgress: (p) => renderer.update(p), signal: abort.signal },
      );
      const result = await sim.run();
      process.stderr.write(summaryText(result, { speed: o.speed, store: storeLabel }) + '\n');
      if (o.json) process.stdout.write(JSON.stringify(result) + '\n');
      if (o.minDetection !== undefined && result.score.injected > 0 && result.score.detected / result.score.injected < o.minDetection) {
        log(`fab-sim: detection ${result.score.detected}/${result.score.injected} is below --min-detection ${o.minDetection}`);
        return 3;
      }
      return result.aborted ? 130 : 0;
    } finally {
      await nc.drain().catch((err: unknown) => log(`fab-sim: NATS drain failed: ${(err as Error).message}`));
    }
  } finally {
    await store.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      // No message: --help, asked for (stdout, exit 0); else a wrong command line (stderr, exit 2).
      if (!err.message) process.stdout.write(USAGE);
      else process.stderr.write(`fab-sim: ${err.message}\n\n${USAGE}`);
      process.exit(err.message ? 2 : 0);
    }
    process.stderr.write(`fab-sim: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
