import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { describeWithInfra, NatsServerHandle, startNatsServer } from '@defender/infra-harness';
import { openBucket } from './buckets';
import { DEFAULT_PERMISSION_NAMES, NATS_ROLES, natsAuthorizationConfig, NatsRole, roleParts } from './permissions';
import { ensureStreams, STREAMS } from './streams';

const password = (role: NatsRole) => `${role}-password-0123`;
const names = DEFAULT_PERMISSION_NAMES;
/** Whether `role` has the writes of app role `owner` (the embedded controller's defender has two). */
const hasWritesOf = (role: NatsRole, owner: NatsRole) => roleParts(role).includes(owner);

/** Which role may write each bucket (every write is a publish to `$KV.<bucket>.<key>`). */
const BUCKET_OWNER: Record<keyof typeof names, NatsRole> = {
  stableIds: 'defender',
  heartbeats: 'defender',
  assignments: 'controller',
  elections: 'election-agent',
};

/** Which role may publish each stream subject. */
const SUBJECT_OWNER: Record<string, NatsRole> = {
  'dc.tool1.ch1.completed': 'publisher',
  'dc.dead.bad-payload': 'defender',
  'defense.alarms.tool1.ch1': 'defender',
  'defense.holds.tool1.ch1': 'defender',
};

describeWithInfra(['nats'], 'NATS identities with least privilege (a real nats-server with per-role users)', () => {
  let server: NatsServerHandle | undefined;
  let dir = '';
  const conns = new Map<NatsRole, NatsConnection>();
  const as = (role: NatsRole) => conns.get(role)!;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'defender-nats-auth-'));
    const conf = join(dir, 'auth.conf');
    writeFileSync(conf, natsAuthorizationConfig(NATS_ROLES.map((role) => ({ user: role, password: password(role), role }))));
    server = await startNatsServer({ extraArgs: ['-c', conf] });
    for (const role of NATS_ROLES) conns.set(role, await connect({ servers: server.url, user: role, pass: password(role) }));
    // Each owner creates what it owns, as the apps do.
    await ensureStreams(as('defender'));
    for (const [bucket, owner] of Object.entries(BUCKET_OWNER)) await openBucket(as(owner), names[bucket as keyof typeof names]);
  }, 60_000);

  afterAll(async () => {
    for (const nc of conns.values()) await nc.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a connection without a known user', async () => {
    await expect(connect({ servers: server!.url, user: 'dashboard', pass: 'wrong-password-000', reconnect: false })).rejects.toThrow(/Authorization/i);
  });

  it.each(Object.keys(BUCKET_OWNER) as (keyof typeof names)[])('bucket %s: only its owner writes; every identity reads and watches', async (bucket) => {
    const owner = BUCKET_OWNER[bucket];
    for (const role of NATS_ROLES) {
      const kv = await new Kvm(as(role)).open(names[bucket]);
      const write = kv.put(`probe-${role}`, JSON.stringify({ by: role }));
      if (hasWritesOf(role, owner)) await expect(write).resolves.toBeGreaterThan(0);
      else await expect(write).rejects.toThrow(`Permissions Violation for Publish to "$KV.${names[bucket]}.probe-${role}"`);
      // Deleting a key is a write too.
      if (!hasWritesOf(role, owner)) await expect(kv.delete(`probe-${owner}`)).rejects.toThrow(/Permissions Violation/);
    }
    for (const role of NATS_ROLES) {
      const kv = await new Kvm(as(role)).open(names[bucket]);
      expect((await kv.get(`probe-${owner}`))?.json()).toEqual({ by: owner });
      const watch = await kv.watch({ key: `probe-${owner}` });
      for await (const e of watch) {
        expect(e.json()).toEqual({ by: owner });
        break;
      }
    }
  });

  it('only a bucket\'s writer sets its value limit on a bucket created without one (by an older version)', async () => {
    const limit = 8 * 1024;
    for (const [bucket, owner] of Object.entries(BUCKET_OWNER)) {
      const name = names[bucket as keyof typeof names];
      for (const role of NATS_ROLES.filter((r) => !hasWritesOf(r, owner))) {
        await expect(openBucket(as(role), name, { maxValueBytes: limit, applyLimit: true })).rejects.toThrow(/Permissions Violation/);
      }
      await openBucket(as(owner), name, { maxValueBytes: limit, applyLimit: true });
      expect({ name, limit: (await (await jetstreamManager(as('dashboard'))).streams.info(`KV_${name}`)).config.max_msg_size }).toEqual({ name, limit });
    }
  });

  it.each(Object.entries(SUBJECT_OWNER))('stream subject %s: only %s publishes', async (subject, owner) => {
    for (const role of NATS_ROLES) {
      const pub = jetstream(as(role)).publish(subject, JSON.stringify({ by: role }), { msgID: `${subject}-${role}` });
      if (hasWritesOf(role, owner)) await expect(pub).resolves.toMatchObject({ duplicate: false });
      else await expect(pub).rejects.toThrow(`Permissions Violation for Publish to "${subject}"`);
    }
  });

  it('only stream owners (defenders, publishers) update the streams; nobody purges or deletes a stream or a bucket', async () => {
    await expect(ensureStreams(as('publisher'))).resolves.toBeUndefined();
    const cfg = (await (await jetstreamManager(as('defender'))).streams.info(STREAMS.defenseEvents)).config;
    for (const role of NATS_ROLES) {
      const jsm = await jetstreamManager(as(role));
      if (!hasWritesOf(role, 'defender') && !hasWritesOf(role, 'publisher')) {
        await expect(jsm.streams.update(STREAMS.defenseEvents, { ...cfg, description: `by ${role}` })).rejects.toThrow(/Permissions Violation/);
      }
      for (const stream of [STREAMS.notifications, `KV_${names.assignments}`, `KV_${names.elections}`]) {
        await expect(jsm.streams.purge(stream)).rejects.toThrow(/Permissions Violation/);
        await expect(jsm.streams.delete(stream)).rejects.toThrow(/Permissions Violation/);
      }
    }
  });
});
