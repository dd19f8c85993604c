/**
 * defenderctl: the operator's view of a Defender cluster. See tools/defenderctl/README.md.
 *   node -r ./tools/scripts/register.js tools/defenderctl/src/main.ts status
 */
import { connect } from '@nats-io/transport-node';
import { natsInboxPrefix } from '@defender/nats-kv';
import { commandHelp, completionScript, parseCommandLine, SHELLS, UsageError } from './lib/cli';
import { assignments, CtlError, drain, explainChamber, natsWhere, rebaseline, requireCluster, status, tailAlarms, tryStore } from './lib/commands';
import { POINT_ELSEWHERE, readLocalFab, resolveTarget } from './lib/context';
import { formatAssignments, formatExplain, formatStatus } from './lib/format';
import { formatStrategyShow, putStrategy, readStrategyFile, showStrategy } from './lib/strategy';
import { equipmentEventOf, publishEvent } from './lib/event';

async function main(argv: string[]): Promise<number> {
  const inv = parseCommandLine(argv);
  if (inv.kind === 'help') {
    process.stdout.write(`${inv.text}\n`);
    return inv.exitCode;
  }
  const { command: cmd, args: rest } = inv;
  const str = (name: string): string | undefined => (typeof inv.values[name] === 'string' ? (inv.values[name] as string) : undefined);
  const bool = (name: string): boolean => inv.values[name] === true;
  const v = {
    json: bool('json'),
    nats: str('nats'),
    controller: str('controller'),
    store: str('store'),
    defender: str('defender'),
    n: str('n'),
    follow: bool('follow'),
    holds: bool('holds'),
    chamber: str('chamber'),
    timeout: str('timeout'),
    recipe: str('recipe'),
    exclude: str('exclude'),
    'min-runs': str('min-runs'),
    reason: str('reason'),
    scope: str('scope'),
    file: str('file'),
    author: str('author'),
    id: str('id'),
    at: str('at'),
    note: str('note'),
    parts: str('parts'),
    'idle-seconds': str('idle-seconds'),
  };
  if (cmd === 'completion') {
    process.stdout.write(completionScript(rest[0] as (typeof SHELLS)[number]));
    return 0;
  }
  const json = v.json;
  const target = resolveTarget({ ...(v.nats ? { nats: v.nats } : {}), ...(v.controller ? { controller: v.controller } : {}), ...(v.store ? { store: v.store } : {}) }, process.env, v.nats ? null : readLocalFab());
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const note = (s: string) => process.stderr.write(`defenderctl: ${s}\n`);
  const arg = rest[0] ?? '';
  const usageOf = (message: string) => new UsageError(message, commandHelp(cmd));
  if (cmd === 'rebaseline') {
    if (!v.reason?.trim()) throw usageOf('rebaseline needs --reason (it is recorded with the new limits)');
    const minRuns = v['min-runs'] === undefined ? undefined : Number(v['min-runs']);
    if (minRuns !== undefined && !(Number.isInteger(minRuns) && minRuns >= 2 && minRuns <= 500)) throw usageOf('--min-runs must be an integer in 2..500');
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
  if (cmd === 'event') {
    const event = equipmentEventOf(
      {
        chamber: arg,
        kind: rest[1] ?? '',
        ...(v.id ? { id: v.id } : {}),
        ...(v.at ? { at: v.at } : {}),
        ...(v.note !== undefined ? { note: v.note } : {}),
        ...(v.parts !== undefined ? { parts: v.parts } : {}),
        ...(v.recipe !== undefined ? { recipe: v.recipe } : {}),
        ...(v['idle-seconds'] !== undefined ? { idleSeconds: v['idle-seconds'] } : {}),
        author: v.author ?? process.env['USER'] ?? 'defenderctl',
      },
      new Date(),
    );
    const r = await publishEvent(target, event);
    out(json ? JSON.stringify(r, null, 2) : `${r.duplicate ? 'already published' : 'published'}: ${event.kind} ${event.eventId} on ${event.toolId}:${event.chamberId} (${r.subject}, stream sequence ${r.sequence}); the chamber applies it before its next run`);
    return 0;
  }
  if (cmd === 'strategy') {
    const put = arg === 'put';
    const misplaced = put ? (['recipe'] as const).filter((o) => v[o] !== undefined) : (['scope', 'file', 'author'] as const).filter((o) => v[o] !== undefined);
    if (misplaced.length > 0) throw usageOf(`strategy ${arg} does not take ${misplaced.map((o) => `--${o}`).join(', ')}`);
    if (put && rest.length > 1) throw usageOf('strategy put takes no chamber (the scope says where it applies)');
    if (put && (!v.scope || !v.file)) throw usageOf('strategy put needs --scope and --file');
    if (!put && rest.length !== 2) throw usageOf('strategy show needs a chamber <tool:chamber>');
    // The document is read and checked before the store is opened: a bad one never needs it.
    const document = put && v.file ? await readStrategyFile(v.file) : undefined;
    const store = await tryStore(target, note);
    if (!store) throw new CtlError(`strategy needs the store (${target.storeLabel ?? 'none configured: --store sqlite:FILE|cassandra:HOSTS or STORE_BACKEND'})`);
    try {
      if (document && v.scope) {
        const r = await putStrategy(store, { scope: v.scope, document, author: v.author ?? process.env['USER'] ?? 'defenderctl', source: v.file }, new Date());
        out(json ? JSON.stringify(r, null, 2) : `stored ${r.scope} v${r.version}${r.name ? ` "${r.name}"` : ''} (by ${r.author || '?'})`);
        return 0;
      }
      const s = await showStrategy(store, rest[1] ?? '', v.recipe);
      out(json ? JSON.stringify(s, null, 2) : formatStrategyShow(s));
      return s.winnerProblems.length > 0 ? 1 : 0;
    } finally {
      await store.close();
    }
  }
  const nc = await connect({ servers: target.natsServers, name: 'defenderctl', timeout: 5000, ...(target.natsCredentials ?? {}), ...(target.natsCredentials ? { inboxPrefix: natsInboxPrefix(target.natsCredentials.user) } : {}), ...(target.natsTls ? { tls: { ...target.natsTls } } : {}) }).catch((err: unknown) => {
    throw new CtlError(`cannot reach NATS at ${natsWhere(target)}: ${(err as Error).message}; ${POINT_ELSEWHERE}`, { cause: err });
  });
  try {
    // Some other NATS (the default URL, a stale NATS_SERVERS) is not a cluster with missing buckets.
    await requireCluster(nc, target);
    switch (cmd) {
      case 'status': {
        const store = await tryStore(target, note);
        let s;
        try {
          s = await status(nc, target, store);
        } finally {
          await store?.close();
        }
        out(json ? JSON.stringify(s, null, 2) : formatStatus(s));
        if (s.problems.length === 0) return 0;
        note(`${s.problems.length} problem(s) at ${natsWhere(target)}${json ? ' (problems in the JSON)' : ' (the PROBLEM lines above)'}`);
        return 1;
      }
      case 'assignments': {
        const a = await assignments(nc, target, v.defender, note);
        out(json ? JSON.stringify(a, null, 2) : formatAssignments(a.chambers, a.mapVersion, a.defender ?? undefined));
        return 0;
      }
      case 'explain': {
        const e = await explainChamber(nc, target, arg, note);
        out(json ? JSON.stringify(e, null, 2) : formatExplain(e));
        return e.owner ? 0 : 1;
      }
      case 'alarms': {
        const n = v.n === undefined ? 20 : Number(v.n);
        if (!Number.isInteger(n) || n < 0 || n > 100_000) throw usageOf('-n must be an integer in 0..100000');
        const abort = new AbortController();
        process.once('SIGINT', () => abort.abort());
        process.once('SIGTERM', () => abort.abort());
        await tailAlarms(nc, { n, follow: v.follow, holds: v.holds, ...(v.chamber ? { chamber: v.chamber } : {}), json, signal: abort.signal, write: out });
        return 0;
      }
      case 'drain': {
        const timeoutMs = (v.timeout === undefined ? 90 : Number(v.timeout)) * 1000;
        if (!(timeoutMs > 0)) throw usageOf('--timeout must be a positive number of seconds');
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
      process.stderr.write(`defenderctl: ${err.message}\n\n${err.help}\n`);
      process.exit(2);
    }
    process.stderr.write(`defenderctl: ${err instanceof CtlError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
