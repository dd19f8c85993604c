/**
 * defenderctl: the operator's view of a Defender cluster. See tools/defenderctl/README.md.
 *   node -r ./tools/scripts/register.js tools/defenderctl/src/main.ts status
 */
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { assignments, CtlError, drain, explainChamber, rebaseline, status, tailAlarms, tryStore } from './lib/commands';
import { readLocalFab, resolveTarget } from './lib/context';
import { formatAssignments, formatExplain, formatStatus } from './lib/format';

const USAGE = `usage: defenderctl [--json] [--nats URL] [--controller URL,...] [--store sqlite:FILE|cassandra:HOSTS] <command>

  status                          leader, trigger state, map, defenders (state, chambers, weight vs average)
  assignments [--defender N]      chambers and their owners (weights from the store)
  explain <tool:chamber>          owner, weight, why it is there, its moves in the kept map versions
  alarms tail [-n N] [-f] [--holds] [--chamber KEY]
                                  the last N alarms (default 20); -f follows new ones until Ctrl-C
  drain <defender>                graceful leave of a local-fab defender (SIGTERM), waits for the new map
  rebaseline <tool:chamber> --reason TEXT [--recipe R] [--exclude RUN,...] [--min-runs N]
                                  new Phase I from the next run for every chart of the chamber (or
                                  recipe) and its monitor; excluded runs never enter it (store only)

Without flags it talks to the running local fab (tmp/local-fab/current.json), else to the apps'
variables: NATS_SERVERS, CONTROLLER_URLS, STORE_BACKEND/SQLITE_PATH/CASSANDRA_*, NATS_KV_*, ELECTION_KV_BUCKET.
Exit codes: 0 ok, 1 failure, 2 usage.`;

class UsageError extends Error {
  override readonly name = 'UsageError';
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        json: { type: 'boolean' },
        nats: { type: 'string' },
        controller: { type: 'string' },
        store: { type: 'string' },
        defender: { type: 'string' },
        n: { type: 'string', short: 'n' },
        follow: { type: 'boolean', short: 'f' },
        holds: { type: 'boolean' },
        chamber: { type: 'string' },
        timeout: { type: 'string' },
        recipe: { type: 'string' },
        exclude: { type: 'string' },
        'min-runs': { type: 'string' },
        reason: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values: v, positionals: pos } = parsed;
  if (v.help || pos.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return v.help ? 0 : 2;
  }
  const json = v.json ?? false;
  const target = resolveTarget({ ...(v.nats ? { nats: v.nats } : {}), ...(v.controller ? { controller: v.controller } : {}), ...(v.store ? { store: v.store } : {}) }, process.env, v.nats ? null : readLocalFab());
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const note = (s: string) => process.stderr.write(`defenderctl: ${s}\n`);
  const [cmd = '', ...rest] = pos;
  const arg = rest[0] ?? '';
  const want = (n: number) => {
    if (rest.length !== n) throw new UsageError(`${cmd} takes ${n === 0 ? 'no arguments' : `${n} argument${n > 1 ? 's' : ''}`}`);
  };
  if (!['status', 'assignments', 'explain', 'alarms', 'drain', 'rebaseline'].includes(cmd)) throw new UsageError(`unknown command "${cmd}"`);
  if (cmd === 'rebaseline') {
    want(1);
    if (!v.reason?.trim()) throw new UsageError('rebaseline needs --reason (it is recorded with the new limits)');
    const minRuns = v['min-runs'] === undefined ? undefined : Number(v['min-runs']);
    if (minRuns !== undefined && !(Number.isInteger(minRuns) && minRuns >= 2 && minRuns <= 500)) throw new UsageError('--min-runs must be an integer in 2..500');
    const store = await tryStore(target, note);
    if (!store) throw new CtlError(`rebaseline needs the store (${target.storeLabel ?? 'none configured: --store sqlite:FILE|cassandra:HOSTS or STORE_BACKEND'})`);
    try {
      const r = await rebaseline(
        store,
        arg,
        {
          ...(v.recipe ? { recipe: v.recipe } : {}),
          reason: v.reason.trim(),
          requestedBy: process.env['USER'] ?? 'defenderctl',
          excludeRunIds: (v.exclude ?? '').split(',').map((x) => x.trim()).filter(Boolean),
          ...(minRuns !== undefined ? { minRuns } : {}),
        },
        new Date(),
      );
      out(
        json
          ? JSON.stringify(r, null, 2)
          : [
              `${r.chamber}: ${r.requests.length} chart${r.requests.length === 1 ? '' : 's'} re-baselined (${r.reason}; by ${r.requestedBy}${r.excludeRunIds.length ? `; excluding ${r.excludeRunIds.join(', ')}` : ''})`,
              ...r.requests.map((q) => `  ${q.indicatorKey}  v${q.replacesVersion} -> v${q.version} after a new Phase I${r.minRuns ? ` of ${r.minRuns} runs` : ''}`),
            ].join('\n'),
      );
      return 0;
    } finally {
      await store.close();
    }
  }
  const nc = await connect({ servers: target.natsServers, name: 'defenderctl', timeout: 5000 }).catch((err: unknown) => {
    throw new CtlError(`cannot reach NATS at ${target.natsServers.join(',')} (${target.source}): ${(err as Error).message}`, { cause: err });
  });
  try {
    switch (cmd) {
      case 'status': {
        want(0);
        const s = await status(nc, target);
        out(json ? JSON.stringify(s, null, 2) : formatStatus(s));
        return 0;
      }
      case 'assignments': {
        want(0);
        const a = await assignments(nc, target, v.defender, note);
        out(json ? JSON.stringify(a, null, 2) : formatAssignments(a.chambers, a.mapVersion, a.defender ?? undefined));
        return 0;
      }
      case 'explain': {
        want(1);
        const e = await explainChamber(nc, target, arg, note);
        out(json ? JSON.stringify(e, null, 2) : formatExplain(e));
        return e.owner ? 0 : 1;
      }
      case 'alarms': {
        if (rest[0] !== 'tail' || rest.length !== 1) throw new UsageError('alarms takes one subcommand: tail');
        const n = v.n === undefined ? 20 : Number(v.n);
        if (!Number.isInteger(n) || n < 0 || n > 100_000) throw new UsageError('-n must be an integer in 0..100000');
        const abort = new AbortController();
        process.once('SIGINT', () => abort.abort());
        process.once('SIGTERM', () => abort.abort());
        await tailAlarms(nc, { n, follow: v.follow ?? false, holds: v.holds ?? false, ...(v.chamber ? { chamber: v.chamber } : {}), json, signal: abort.signal, write: out });
        return 0;
      }
      case 'drain': {
        want(1);
        const timeoutMs = (v.timeout === undefined ? 90 : Number(v.timeout)) * 1000;
        if (!(timeoutMs > 0)) throw new UsageError('--timeout must be a positive number of seconds');
        const r = await drain(nc, target, arg, timeoutMs, note);
        out(json ? JSON.stringify(r, null, 2) : r.mapVersion !== null ? `${r.defender} (${r.process}) drained; map v${r.mapVersion} moved ${r.chambersMoved} chambers to the others` : `${r.defender} (${r.process}) stopped`);
        return 0;
      }
    }
    return 2;
  } finally {
    await nc.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`defenderctl: ${err.message}\n\n${USAGE}\n`);
      process.exit(2);
    }
    process.stderr.write(`defenderctl: ${err instanceof CtlError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
