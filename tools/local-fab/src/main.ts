/**
 * The local fab: the whole Defender cluster plus the fab simulator on this machine, one command.
 * Normally started by tools/local-fab/start.sh (installs and builds first). `--help` for options.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { CURRENT_FILE, LocalFab } from './lib/local-fab';
import { describeRunLength, FULL_RUN, runLengthArgs, SHORT_RUN } from './lib/run-length';

const USAGE = `usage: bash tools/local-fab/start.sh [options] [-- fab-sim options]

  --defenders N        defenders to start (default 3)
  --controllers N      controller replicas, the others stand by (default 1)
  --size NAME          fab size: tiny (4 tools), small (20), medium (100), large (500), fab (1600); default small
  --tools N            exact number of tools
  --speed X|max        simulated seconds per second after the Phase I warm-up (default ${SHORT_RUN.speed}; ${FULL_RUN.speed} with --full)
  --runs N             runs per chamber, 30 of them Phase I (default ${SHORT_RUN.runs}; ${FULL_RUN.runs} with --full)
  --full               the simulator's full run: ${FULL_RUN.runs} runs per chamber at speed ${FULL_RUN.speed}, its summary after
                       ~27 minutes (default: the short run, its summary after a few minutes)
  --seed N             fab seed (default 1)
  --cassandra          store on a local Apache Cassandra node instead of SQLite (fetched on first use)
  --nats-cluster       NATS as a 3-node cluster on loopback ports, JetStream replicas 3 for every
                       stream and bucket (the apps get all three URLs)
  --port N             dashboard port (default 8090, or a free one when taken; 0: any free port)
  --no-sim             start the cluster only (run fab-sim yourself; see docs/local-fab.md)
  --exit-when-done     stop everything after the simulator's summary; exit with its code
  --log-level LEVEL    apps' LOG_LEVEL (default info; logs go to <run dir>/logs)
  -h, --help

Everything after -- goes to fab-sim run (e.g. -- --excursions 12 --excursion-kinds drift,spike).
Ctrl-C stops every process in order.`;

function fail(msg: string): never {
  process.stderr.write(`${msg}\n\n${USAGE}\n`);
  process.exit(2);
}

function posInt(name: string, v: string | undefined, def: number, max: number, min = 1): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) fail(`--${name} must be an integer in ${min}..${max}`);
  return n;
}

/** A closed terminal (or a pipe reader that quit) must not abort the orderly stop. */
function tolerateClosedOutput(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

async function main(): Promise<number> {
  tolerateClosedOutput(process.stdout);
  tolerateClosedOutput(process.stderr);
  const argv = process.argv.slice(2);
  const dd = argv.indexOf('--');
  const own = dd >= 0 ? argv.slice(0, dd) : argv;
  const simExtra = dd >= 0 ? argv.slice(dd + 1) : [];
  let values;
  try {
    ({ values } = parseArgs({
      args: own,
      strict: true,
      options: {
        defenders: { type: 'string' },
        controllers: { type: 'string' },
        size: { type: 'string' },
        tools: { type: 'string' },
        speed: { type: 'string' },
        runs: { type: 'string' },
        full: { type: 'boolean' },
        seed: { type: 'string' },
        cassandra: { type: 'boolean' },
        'nats-cluster': { type: 'boolean' },
        port: { type: 'string' },
        'no-sim': { type: 'boolean' },
        'exit-when-done': { type: 'boolean' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    fail((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const defenders = posInt('defenders', values.defenders, 3, 50);
  const controllers = posInt('controllers', values.controllers, 1, 5);
  const port = values.port === undefined ? undefined : posInt('port', values.port, 8090, 65535, 0);
  // start.sh checks the command line this way before it spends a minute building.
  if (process.env['LOCAL_FAB_CHECK_ONLY'] === '1') return 0;
  const fabArgs = [
    ...(values.size ? ['--size', values.size] : []),
    ...(values.tools ? ['--tools', values.tools] : []),
    ...(values.seed ? ['--seed', values.seed] : []),
  ];
  const runLength = runLengthArgs({ runs: values.runs, speed: values.speed, full: values.full });
  const runArgs = ['--no-seed', ...fabArgs, ...runLength, ...simExtra];

  // Clears the simulator's progress bar line first (it redraws on its next update).
  const log = (l: string) => process.stderr.write(`${process.stderr.isTTY ? '\r\x1b[2K' : ''}${l}\n`);
  const fab = new LocalFab({
    defenders,
    controllers,
    store: values.cassandra ? 'cassandra' : 'sqlite',
    ...(values['nats-cluster'] ? { natsNodes: 3 } : {}),
    ...(port !== undefined ? { dashboardPort: port } : {}),
    ...(values['log-level'] ? { logLevel: values['log-level'] } : {}),
    seedFab: fabArgs,
    log,
  });

  let signals = 0;
  let firstSignalAt = 0;
  let stopping: Promise<void> | undefined;
  const shutdown = (why: string) => {
    // `npm start` forwards the terminal's Ctrl-C that reached us directly too: one press, two signals.
    if (signals > 0 && Date.now() - firstSignalAt < 2000) return;
    signals++;
    firstSignalAt ||= Date.now();
    if (signals > 1) {
      log('local-fab: second signal: killing everything now');
      process.exit(130);
    }
    log(`\nlocal-fab: ${why}: stopping (simulator, defenders, controllers, dashboard, agent, NATS) ...`);
    stopping = fab.stop();
    void stopping.then(
      () => {
        log('local-fab: stopped.');
        process.exit(130);
      },
      (err: unknown) => {
        log(`local-fab: stop failed: ${(err as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('Ctrl-C'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGHUP', () => shutdown('SIGHUP'));

  log(`local-fab: run directory ${fab.runDir}`);
  const started = Date.now();
  await fab.start().catch(async (err: unknown) => {
    log(`local-fab: could not start: ${(err as Error).message}`);
    throw err;
  });
  if (stopping) return new Promise(() => undefined);
  mkdirSync(dirname(CURRENT_FILE), { recursive: true });
  writeFileSync(CURRENT_FILE, JSON.stringify(fab.describe(), null, 2) + '\n', { mode: 0o600 });

  const map = await fab.map();
  log(
    [
      '',
      `  Defender local fab is up (${((Date.now() - started) / 1000).toFixed(0)} s): ${defenders} defenders, ${controllers} controller${controllers > 1 ? 's' : ''}, 1 election agent, ${fab.natsNodes > 1 ? `NATS cluster of ${fab.natsNodes} nodes (replicas ${fab.natsNodes})` : 'NATS'} over TLS, ${fab.storeKind === 'sqlite' ? `SQLite ${fab.sqlitePath}` : `Cassandra ${fab.cassandraHosts?.join(',')}`}`,
      '',
      `  Dashboard   ${fab.dashboardLoginUrl}   (signs you in as operator; the token is in ${CURRENT_FILE})`,
      `  Operator    tools/defenderctl/defenderctl status      (also: assignments, explain <tool:chamber>, alarms tail -f, drain <defender>)`,
      `  Logs        ${fab.logDir}`,
      `  NATS        ${fab.natsUrl} (TLS only; CA ${fab.natsTls?.caFile ?? '-'}, NATS_TLS_CA_FILE for your own clients)`,
      `  Map         version ${map?.version ?? '-'}, ${map?.chamberCount ?? 0} chambers (new chambers are picked up within 10 s)`,
      ...(values['no-sim'] ? [] : [`  Simulator   ${describeRunLength({ runs: values.runs, speed: values.speed, full: values.full })}`]),
      '',
      '  Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  if (values['no-sim']) return new Promise(() => undefined);

  const sim = fab.startSimulator('run', runArgs);
  const res = await sim.exited;
  if (stopping) return new Promise(() => undefined);
  if (values['exit-when-done']) {
    await fab.stop();
    return res.code ?? 1;
  }
  log(`\nlocal-fab: the simulation is over (${res.signal ?? `exit ${res.code}`}); the cluster and the dashboard keep running at ${fab.dashboardUrl} — Ctrl-C to stop.`);
  return new Promise(() => undefined);
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`local-fab: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
