import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import type { NatsClusterHandle, NatsClusterNode } from '@defender/infra-harness';
import { waitFor } from '@defender/infra-harness';
import { DEFAULT_BUCKETS, STREAMS } from '@defender/nats-kv';
import { ChamberEvidence } from './analysis';
import type { ChaosCluster, MapRecord } from './cluster';
import { ScenarioOutcome, ScenarioRun, sleep, Suite } from './runner';

/**
 * Faults of one node of a 3-node NATS cluster (JetStream replicas 3 for every stream and bucket),
 * under load: the leader of the notification stream or of the assignment bucket killed, a rolling
 * restart, a node frozen (SIGSTOP: silent to clients and peers, as when partitioned away), a node
 * wiped and rejoined. With two of three nodes up every stream and bucket keeps a quorum: no defender
 * may be judged crashed, no chamber may move, nothing may be lost or applied twice.
 */

const ASSIGNMENT_STREAM = `KV_${DEFAULT_BUCKETS.assignments}`;

function natsCluster(c: ChaosCluster): NatsClusterHandle {
  const n = c.natsCluster;
  if (!n) throw new Error('the nats-cluster scenarios need a suite started with natsNodes: 3');
  return n;
}

/** `fn`, retried while the cluster has no leader for what it asks (JetStream answers "temporarily unavailable"). */
async function retried<T>(what: string, fn: () => Promise<T>): Promise<T> {
  let out: { v: T } | undefined;
  await waitFor(what, async () => {
    out = { v: await fn() };
    return true;
  }, 90_000, 250);
  return out!.v;
}

/** Every JetStream stream of the cluster (the apps' streams and the KV buckets' streams). */
function streamNames(c: ChaosCluster): Promise<string[]> {
  return retried('the list of streams', async () => {
    const jsm = await jetstreamManager(c.nc, { timeout: 2000 });
    const names: string[] = [];
    for await (const n of jsm.streams.names()) names.push(n);
    return names.sort();
  });
}

/**
 * The node leading `stream`, asked again while an election is under way (through `nc`, default the
 * fixture's connection; one to the majority while a node is cut off, which may hold the fixture's).
 */
async function leaderOf(c: ChaosCluster, stream: string, except?: NatsClusterNode, nc: NatsConnection = c.nc): Promise<NatsClusterNode> {
  const nats = natsCluster(c);
  let leader: NatsClusterNode | undefined;
  await waitFor(`a leader of ${stream}${except ? ` other than ${except.name}` : ''}`, async () => {
    leader = await nats.streamLeader(nc, stream).catch(() => undefined);
    return leader !== undefined && leader !== except;
  }, 90_000, 100);
  return leader!;
}

/**
 * Waits until every running node is healthy, as a StatefulSet's probe would: a node whose JetStream
 * stays behind its meta leader for a minute is restarted once (the harness's waitHealthyAsProbed;
 * nats-io/nats-server#5976: beside a loaded machine's other tests it happened after a rolling restart
 * and after a leader kill, past a 90 s wait). That defect is the server's and a pod's probe cures it;
 * the invariants are ours, and the report says when it happened.
 * @returns the node restarted, if one was.
 */
async function waitHealthyAsProbed(c: ChaosCluster, run?: ScenarioRun): Promise<NatsClusterNode | undefined> {
  const restarted = await natsCluster(c).waitHealthyAsProbed({
    onRestart: (node, lastSeen) => {
      run?.note(`${node.name} was restarted after a minute unhealthy (${lastSeen}), as its pod's probe would.`);
      c.note('nats-node-sigterm', node.name, { reason: 'unhealthy for 60 s' });
    },
  });
  if (restarted) c.note('nats-node-up', restarted.name);
  return restarted;
}

/**
 * Waits until every stream and bucket has a leader and every live replica is current, as a restarted
 * pod's startup probe would (the harness's waitStreamCurrentAsProbed): a node whose replica stays behind
 * for 90 s is restarted once more, and the report says so. (A fresh-clone CI beside two CPU hogs had a
 * restarted node's replica of the heartbeat bucket behind for 90 s in the NATS rolling restart.) One more
 * NATS restart is a fault like the others: the invariants must hold through it.
 */
async function waitAllCurrent(c: ChaosCluster, run?: ScenarioRun): Promise<void> {
  const nats = natsCluster(c);
  await waitHealthyAsProbed(c, run);
  for (const s of await streamNames(c)) {
    const restarted: string[] = [];
    await nats.waitStreamCurrentAsProbed(c.nc, s, {
      onRestart: (node, lastSeen) => {
        run?.note(`${node.name} was restarted: its replica of ${s} stayed behind for 90 s (${lastSeen}), as its startup probe would (sooner).`);
        c.note('nats-node-sigterm', node.name, { reason: `${s} replica behind for 90 s` });
        restarted.push(node.name);
      },
    });
    for (const name of restarted) c.note('nats-node-up', name);
  }
}

/** The leaders of every stream, `stream=node` (for the report). */
async function leaders(c: ChaosCluster): Promise<string> {
  const nats = natsCluster(c);
  const out: string[] = [];
  for (const s of await streamNames(c)) out.push(`${s}=${(await nats.streamLeader(c.nc, s).catch(() => undefined))?.name ?? '?'}`);
  return out.join(', ');
}

/** JetStream's replica count of every stream (all must be 3). */
async function replicaCounts(c: ChaosCluster): Promise<Map<string, number>> {
  const jsm = await jetstreamManager(c.nc, { timeout: 2000 });
  const out = new Map<string, number>();
  for (const s of await streamNames(c)) out.set(s, (await retried(`${s} info`, () => jsm.streams.info(s))).config.num_replicas);
  return out;
}

/**
 * The common frame: settle, note leaders and replicas, run the fault, wait until the cluster and
 * NATS are whole again, then measure what every node fault must not cause (crash maps, moved
 * chambers) and when processing resumed after it.
 */
async function nodeFault(
  suite: Suite,
  id: string,
  title: string,
  scenario: string,
  fault: (run: ScenarioRun, nats: NatsClusterHandle) => Promise<{ faultAt: number; healedAt: number }>,
): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const nats = natsCluster(c);
  const run = new ScenarioRun(suite, id, title, scenario);
  run.note(`NATS here is a cluster of ${nats.nodes.length} nats-server ${nats.version} nodes (${nats.nodes.map((n) => n.name).join(', ')}) on loopback ports, not the single server the cluster line names; every app has all their URLs and creates its streams and buckets with ${nats.nodes.length} replicas.`);
  await sleep(1500);
  const replicas = await replicaCounts(c);
  const notR3 = [...replicas].filter(([, r]) => r !== nats.nodes.length);
  run.measure({ name: `streams and buckets with ${nats.nodes.length} replicas`, value: replicas.size - notR3.length, unit: 'count', target: `${replicas.size} (all)`, verdict: notR3.length === 0 ? 'met' : 'missed', note: notR3.map(([s, r]) => `${s}: R${r}`).join(', ') || [...replicas.keys()].join(', ') });
  run.mark(Date.now(), 'leaders before', undefined, await leaders(c));
  const before: MapRecord = c.current();
  const { faultAt, healedAt } = await fault(run, nats);
  await waitAllCurrent(c, run);
  run.mark(Date.now(), 'every stream and bucket has a leader and current replicas', undefined, await leaders(c));
  await sleep(2000);
  await c.waitStable(60_000).catch((err: unknown) => run.note(`the cluster did not settle: ${(err as Error).message}`));
  await c.waitLeader(30_000);
  const maps = run.maps();
  const crashes = maps.filter((m) => m.map.trigger === 'crash');
  const moved = Object.keys(before.map.assignments).filter((k) => c.current().map.assignments[k] !== before.map.assignments[k]);
  run.measure({ name: 'crash maps (defenders judged dead)', value: crashes.length, unit: 'count', target: '0', verdict: crashes.length === 0 ? 'met' : 'missed', note: maps.map((m) => `v${m.map.version} ${m.map.trigger}`).join(', ') || 'no map' });
  if (crashes.length > 0) {
    run.note(
      'Crash maps here come from heartbeats that could not be written while the heartbeat bucket had no leader: a JetStream leader election ' +
        '(several seconds) outlasts the crash detection of these intervals. Defenders that kept running are judged dead and ' +
        'their chambers move; the invariants still hold (fencing), but the controller cannot tell a NATS election from crashes.',
    );
  }
  run.measure({ name: 'chambers moved', value: moved.length, unit: 'count', target: '0', verdict: moved.length === 0 ? 'met' : 'missed' });
  return run.finish((ev: ChamberEvidence[]) => {
    const during = ev.flatMap((ch) => ch.committed.filter((r) => r.committedAt >= faultAt && r.committedAt < healedAt)).length;
    run.measure({ name: 'runs committed while the node was out', value: during, unit: 'count', verdict: 'info', note: 'two nodes keep a quorum, but what the lost node led has no leader until JetStream elects one (seconds)' });
    const after = ev.flatMap((ch) => ch.committed.filter((r) => r.committedAt >= faultAt).map((r) => r.committedAt));
    const first = after.length ? Math.min(...after) : null;
    if (first !== null) run.mark(first, 'first run committed after the fault');
    run.measure({ name: 'fault -> first run committed', value: first === null ? null : (first - faultAt) / 1000, unit: 's', verdict: 'info' });
  });
}

/** A node SIGKILLed (its store kept), the new leader awaited, the node started again after `downMs`. */
async function killLeaderOf(run: ScenarioRun, stream: string, downMs: number): Promise<{ faultAt: number; healedAt: number }> {
  const c = run.cluster;
  const victim = await leaderOf(c, stream);
  const faultAt = Date.now();
  c.note('nats-node-kill', victim.name, { leads: stream });
  await victim.halt({ hard: true });
  const next = await leaderOf(c, stream, victim);
  const electedAt = Date.now();
  c.note('nats-leader-elected', next.name, { stream });
  run.measure({ name: `${stream}: kill of its leader -> new leader answers`, value: (electedAt - faultAt) / 1000, unit: 's', verdict: 'info', note: `${victim.name} -> ${next.name}` });
  await sleep(Math.max(0, faultAt + downMs - Date.now()));
  await victim.start();
  const healedAt = Date.now();
  c.note('nats-node-up', victim.name);
  return { faultAt, healedAt };
}

export function notificationLeaderKill(suite: Suite, downMs = 8000): Promise<ScenarioOutcome> {
  return nodeFault(
    suite,
    'nats-notification-leader-kill',
    'NATS cluster: the notification stream leader killed',
    `The nats-server leading the notification stream (${STREAMS.notifications}, R3) is SIGKILLed under load and started again on its store after ${downMs / 1000} s. The two others elect a new leader; publishers and defenders reconnect to them and keep going.`,
    (run) => killLeaderOf(run, STREAMS.notifications, downMs),
  );
}

export function assignmentBucketLeaderKill(suite: Suite, downMs = 8000): Promise<ScenarioOutcome> {
  return nodeFault(
    suite,
    'nats-assignment-leader-kill',
    'NATS cluster: the assignment bucket leader killed',
    `The nats-server leading the assignment-map KV bucket (${ASSIGNMENT_STREAM}, R3) is SIGKILLed under load and started again on its store after ${downMs / 1000} s. Map reads, watches and compare-and-set writes move to the new leader; heartbeats and claims keep their quorum.`,
    (run) => killLeaderOf(run, ASSIGNMENT_STREAM, downMs),
  );
}

export function rollingNatsRestart(suite: Suite): Promise<ScenarioOutcome> {
  return nodeFault(
    suite,
    'nats-rolling-restart',
    'NATS cluster: rolling restart of all three nodes',
    'Each nats-server in turn gets SIGTERM and is started again on its store, the next one only once every stream and bucket has a leader and current replicas again (as an upgrade of a StatefulSet would do).',
    async (run) => {
      const c = run.cluster;
      const faultAt = Date.now();
      const nats = natsCluster(c);
      for (const node of nats.nodes) {
        const t0 = Date.now();
        c.note('nats-node-sigterm', node.name);
        await node.restart({ hard: false });
        c.note('nats-node-up', node.name);
        // As a StatefulSet's probe would: a node stuck behind its meta leader is restarted again.
        const stuck = await waitHealthyAsProbed(c, run);
        await waitAllCurrent(c, run);
        run.measure({ name: `${node.name}: SIGTERM -> every stream current again`, value: (Date.now() - t0) / 1000, unit: 's', verdict: 'info', ...(stuck ? { note: 'restarted twice' } : {}) });
      }
      return { faultAt, healedAt: Date.now() };
    },
  );
}

export function partitionedNatsNode(suite: Suite, cutMs = 10_000): Promise<ScenarioOutcome> {
  return nodeFault(
    suite,
    'nats-node-partitioned',
    'NATS cluster: one node partitioned away (routes cut)',
    `Every route between the node leading the notification stream and its two peers is cut for ${cutMs / 1000} s (the harness routes each pair of nodes through its own TCP proxy): the node keeps running and keeps its clients, but without a quorum it leads nothing and its clients' JetStream calls fail. The two others elect new leaders; apps connected to the cut-off node must not lose, double or stall runs.`,
    async (run) => {
      const c = run.cluster;
      const nats = natsCluster(c);
      const victim = await leaderOf(c, STREAMS.notifications);
      const majority = await connect({ servers: nats.nodes.filter((n) => n !== victim).map((n) => n.url), name: 'chaos-majority', timeout: 5000, ...c.natsAuth.fixture, tls: c.natsTls });
      const faultAt = Date.now();
      victim.partition();
      c.note('nats-node-partitioned', victim.name, { leads: STREAMS.notifications });
      try {
        const next = await leaderOf(c, STREAMS.notifications, victim, majority);
        run.measure({ name: `${STREAMS.notifications}: routes cut -> new leader answers`, value: (Date.now() - faultAt) / 1000, unit: 's', verdict: 'info', note: `${victim.name} -> ${next.name}` });
        await sleep(Math.max(0, faultAt + cutMs - Date.now()));
      } finally {
        victim.heal();
        c.note('nats-node-healed', victim.name);
        await majority.close();
      }
      return { faultAt, healedAt: Date.now() };
    },
  );
}

export function frozenNatsNode(suite: Suite, frozenMs = 10_000): Promise<ScenarioOutcome> {
  return nodeFault(
    suite,
    'nats-node-frozen',
    'NATS cluster: one node frozen (SIGSTOP)',
    `The node leading the notification stream is frozen with SIGSTOP for ${frozenMs / 1000} s: its sockets stay open but nothing answers, to clients and peers alike (a hung host, or a partition that also cuts its clients off silently). The two others elect new leaders for what it led; clients connected to it must notice and move.`,
    async (run) => {
      const c = run.cluster;
      const victim = await leaderOf(c, STREAMS.notifications);
      const faultAt = Date.now();
      victim.freeze();
      c.note('nats-node-sigstop', victim.name, { leads: STREAMS.notifications });
      const next = await leaderOf(c, STREAMS.notifications, victim);
      run.measure({ name: `${STREAMS.notifications}: node frozen -> new leader answers`, value: (Date.now() - faultAt) / 1000, unit: 's', verdict: 'info', note: `${victim.name} -> ${next.name}` });
      await sleep(Math.max(0, faultAt + frozenMs - Date.now()));
      victim.thaw();
      c.note('nats-node-sigcont', victim.name);
      return { faultAt, healedAt: Date.now() };
    },
  );
}

export function wipedNatsNode(suite: Suite): Promise<ScenarioOutcome> {
  return nodeFault(
    suite,
    'nats-node-wiped',
    'NATS cluster: one node wiped and rejoined',
    `The node leading the assignment bucket is SIGKILLed, its JetStream store deleted, and started again under the same name: it rejoins the meta group and every stream and bucket (${STREAMS.notifications}, the KV buckets, ...) copies its replica back from the current leaders. The data must come back from the other two replicas, not be re-created empty.`,
    async (run) => {
      const c = run.cluster;
      const victim = await leaderOf(c, ASSIGNMENT_STREAM);
      const faultAt = Date.now();
      c.note('nats-node-kill-and-wipe', victim.name, { leads: ASSIGNMENT_STREAM });
      await victim.restart({ hard: true, emptyStore: true, downMs: 3000 });
      c.note('nats-node-up (empty store)', victim.name);
      const healedAt = Date.now();
      await waitAllCurrent(c, run);
      run.measure({ name: 'wiped node up -> every replica current again', value: (Date.now() - healedAt) / 1000, unit: 's', verdict: 'info' });
      return { faultAt, healedAt };
    },
  );
}
