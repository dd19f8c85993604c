import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { Kvm } from '@nats-io/kv';
import { RunPointSet } from '@defender/contracts';
import { SqliteStore } from '@defender/store';
import { describeWithInfra } from '@defender/infra-harness';
import { STREAMS } from '@defender/nats-kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { LocalCluster, SeedChamber } from './cluster';
import { completeRun, RunSpec } from './runs';

const SVIDS = ['pressure', 'rf_power'];
const TAG = `lp${process.pid}`;
const NAMES = { stableIds: `ids-${TAG}`, heartbeats: `hb-${TAG}`, assignments: `map-${TAG}`, elections: `elect-${TAG}` };

function spec(toolId: string, k: number, over: Partial<RunSpec> = {}): RunSpec {
  return { toolId, chamberId: 'ch1', runId: `${toolId}-run-${k}`, svids: SVIDS, samples: 600, seed: Math.imul(k + 1, 2654435761) ^ (toolId.length * 40503), ...over };
}

describeWithInfra(['nats'], 'least privilege: every app on its own NATS user (SECURITY.md)', () => {
  let cluster: LocalCluster | undefined;
  let store: SqliteStore | undefined;
  let publisher: NatsConnection | undefined;

  afterAll(async () => {
    await cluster?.stop();
    await store?.close();
    await publisher?.close();
  });

  it('the apps work with only their role\'s permissions: runs applied once, alarms published, a map published; nothing refused; a read-only identity cannot forge a map', async () => {
    const chambers: SeedChamber[] = ['tool1', 'tool2'].map((toolId) => ({ toolId, chamberId: 'ch1', svidCount: SVIDS.length, collectionFreqHz: 1, contextDurationSeconds: 600 }));
    // The cluster's nats-server gives each app its role's user for these buckets; its watcher reads as the dashboard.
    const c = await LocalCluster.start({ chambers, coldStartWindowSeconds: 1.5, tag: TAG });
    cluster = c;
    await c.startAgent();
    await c.startController('controller-a');
    await c.startDefender('pod-0');
    await c.startDefender('pod-1');
    await c.waitFor('the first map', async () => c.publications.length > 0 && c.latest()!.defenderCount === 2, 60_000);

    // The fab's equipment publishes as `publisher`, the only identity allowed to.
    const pub = await connect(c.nats.connectOptions('publisher'));
    publisher = pub;
    store = await SqliteStore.open({ filename: c.sqlitePath });
    const seqs: Record<string, number[]> = { tool1: [], tool2: [] };
    for (let k = 0; k < 33; k++) {
      for (const tool of Object.keys(seqs)) seqs[tool]!.push(await completeRun(store, pub, spec(tool, k, k >= 31 ? { shift: 15 } : {})));
    }
    const s = store;
    for (const [tool, published] of Object.entries(seqs)) {
      await c.waitFor(`${tool} caught up`, async () => ((await s.chamberState.get({ toolId: tool, chamberId: 'ch1' }))?.highWaterMark ?? 0) === published.at(-1), 90_000, 100);
      const runs: RunPointSet[] = await s.uchart.history({ toolId: tool, chamberId: 'ch1' }, { limit: 1000 });
      expect(runs.map((r) => r.sequence)).toEqual(published);
      expect((await s.alarms.list({ toolId: tool, chamberId: 'ch1' }, { limit: 100 })).length).toBeGreaterThan(0);
    }
    // The shifted runs' alarms reached the stream: the defenders' identity may publish defense.alarms.>.
    const jsm = await jetstreamManager(pub);
    await c.waitFor('alarms in the stream', async () => (await jsm.streams.info(STREAMS.defenseEvents)).state.messages > 0, 30_000, 100);

    // No process was refused anything it needed.
    for (const p of c.procs) expect({ proc: p.name, refused: /Permissions Violation/i.test(p.app.stdout() + p.app.stderr()) }).toEqual({ proc: p.name, refused: false });

    // The watcher's (dashboard's) identity cannot write the map, an election or a heartbeat.
    const reader = await connect(c.nats.connectOptions('dashboard'));
    try {
      const kvm = new Kvm(reader);
      for (const bucket of [NAMES.assignments, NAMES.elections, NAMES.heartbeats]) {
        await expect((await kvm.open(bucket)).put('forged', '{"version":999999}')).rejects.toThrow(/Permissions Violation/);
      }
    } finally {
      await reader.close();
    }
  });
});
