import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import type { KV, KvEntry } from '@nats-io/kv';
import { AssignmentMap, parseStoredMapHead } from '@defender/contracts';
import { describeWithInfra, startSecuredNatsServer, testNatsConnectOptions, waitFor } from '@defender/infra-harness';
import {
  ASSIGNMENT_MAP_KEY,
  assignmentChunkKey,
  AssignmentMapBucket,
  MapPublication,
  StoredMap,
} from './assignment-map';
import { DEFAULT_BUCKETS, listKeys, openBucket } from './buckets';
import { NatsUnavailableError, RevisionConflictError } from './errors';
import { HeartbeatBucket } from './heartbeats';
import { DEFAULT_CHUNK_BYTES, MAX_MAP_VALUE_BYTES } from './map-chunks';
import { bigMap } from './testing/big-map';

const T = '2026-11-25T10:00:00.000Z';

function mapV(version: number, token: string, owner = 'defender-0'): AssignmentMap {
  return {
    ...bigMap(version, 0, 0, token),
    timestamp: T,
    firstAssignmentAt: T,
    controllerId: `c-${token}`,
    defenderCount: 1,
    chamberCount: 1,
    assignments: { 'tool1:ch1': owner },
    defenderInfo: { [owner]: { chambers: 1, weight: 30_000, capacity: 1 } },
  };
}

/**
 * A map whose every entry says which version it was written for: owner `defender-<(i + version) % 4>`
 * and lastMovedAt = version. A map mixed from two publications fails {@link mixProblem}.
 */
function versionedMap(version: number, chambers: number, token = '7'): AssignmentMap {
  return bigMap(version, chambers, 4, token, version);
}

/**
 * `kv` whose every other head read is overtaken: the chunk reads after it wait until `overtaken`
 * (two more publications, or the end of the run) resolves. Pacing by events, not by time.
 */
function overtakenReads(kv: KV, overtaken: (since: number) => Promise<void>, publications: () => number): KV {
  let heads = 0;
  let since = -1;
  return new Proxy(kv, {
    get: (target, prop, receiver) =>
      prop === 'get'
        ? async (...args: Parameters<KV['get']>) => {
            if (args[0] === ASSIGNMENT_MAP_KEY) since = ++heads % 2 === 0 ? publications() : -1;
            else if (since >= 0) await overtaken(since);
            return target.get(...args);
          }
        : Reflect.get(target, prop, receiver),
  });
}

function mixProblem(m: AssignmentMap): string | null {
  const expected = versionedMap(m.version, m.chamberCount, m.fencingToken);
  for (const [chamber, owner] of Object.entries(m.assignments)) {
    if (owner !== expected.assignments[chamber] || m.lastMovedAt[chamber] !== m.version) {
      return `v${m.version}: ${chamber} -> ${owner} moved ${m.lastMovedAt[chamber]}`;
    }
  }
  return Object.keys(expected.assignments).length === m.chamberCount
    ? null
    : `v${m.version}: wrong chamber set`;
}

/** mixProblem for a map read for `owner` alone: exactly its chambers of that version, nothing else. */
function ownMixProblem(s: StoredMap, owner: string): string | null {
  const m = s.map;
  if (s.owner !== owner) return `v${m.version}: read for ${s.owner}, not ${owner}`;
  const expected = versionedMap(m.version, m.chamberCount, m.fencingToken);
  const mine = Object.keys(expected.assignments).filter((c) => expected.assignments[c] === owner);
  for (const [chamber, o] of Object.entries(m.assignments)) {
    if (o !== owner || expected.assignments[chamber] !== owner || m.lastMovedAt[chamber] !== m.version) {
      return `v${m.version}: ${chamber} -> ${o} moved ${m.lastMovedAt[chamber]}`;
    }
  }
  return Object.keys(m.assignments).length === mine.length ? null : `v${m.version}: wrong chamber set for ${owner}`;
}

describeWithInfra(['nats'], 'AssignmentMapBucket and HeartbeatBucket against a real nats-server', () => {
  let nc: NatsConnection;
  let n = 0;

  beforeAll(async () => {
    nc = await connect(testNatsConnectOptions());
  });
  afterAll(async () => {
    await nc.drain();
  });

  async function bucket(): Promise<AssignmentMapBucket> {
    const name = `assign-t${++n}`;
    return new AssignmentMapBucket(await openBucket(nc, name), name);
  }

  it('publishes only by compare-and-set: two writers from one revision -> exactly one wins', async () => {
    const b = await bucket();
    expect(await b.read()).toBeNull();
    const r1 = await b.publish(mapV(1, '5'), null);
    await expect(b.publish(mapV(1, '6'), null)).rejects.toBeInstanceOf(RevisionConflictError);

    const results = await Promise.allSettled([b.publish(mapV(2, '5'), r1), b.publish(mapV(2, '6'), r1)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toBeInstanceOf(RevisionConflictError);
    expect((await b.read())?.map.version).toBe(2);
  });

  it('watch delivers newer maps in order and rejects older versions, lower tokens and garbage', async () => {
    const name = `assign-t${++n}`;
    const kv = await openBucket(nc, name);
    const b = new AssignmentMapBucket(kv, name);
    const seen: StoredMap[] = [];
    const rejected: string[] = [];
    const w = await b.watch({
      onMap: (s) => void seen.push(s),
      onRejected: (_rev, reason) => rejected.push(reason),
    });

    // One publication at a time, each seen by the watcher before the next: a watcher that falls two
    // publications behind may find a head's chunks replaced and report it superseded instead (by
    // design; tested below), which is not what this test is about.
    const heard = (): number => seen.length + rejected.length;
    const step = async (publish: () => Promise<number>, what: string): Promise<number> => {
      const before = heard();
      const r = await publish();
      await waitFor(what, async () => heard() > before, 60_000);
      return r;
    };
    let rev = await step(() => b.publish(mapV(1, '5'), null), 'v1');
    rev = await step(() => b.publish(mapV(2, '5'), rev), 'v2');
    rev = await step(() => kv.put(ASSIGNMENT_MAP_KEY, '{"not":"a map"}'), 'the garbage value');
    rev = await step(() => b.publish(mapV(3, '4'), rev), "a deposed leader's map (lower token)");
    rev = await step(() => b.publish(mapV(2, '6'), rev), 'a map not newer than v2');
    await step(() => b.publish(mapV(3, '6'), rev), 'the last map');

    w.stop();
    await w.done;
    expect(seen.map((s) => [s.map.version, s.map.fencingToken])).toEqual([
      [1, '5'],
      [2, '5'],
      [3, '6'],
    ]);
    expect(rejected).toHaveLength(3);
    expect(rejected[0]).toMatch(/invalid assignment map/);
    expect(rejected[1]).toMatch(/map v3 \(token 4\) is not newer than v2 \(token 5\)/);
  });

  it('heartbeats: publish, read all, report a malformed entry without failing', async () => {
    const name = `hb-t${++n}`;
    const kv = await openBucket(nc, name);
    const hb = new HeartbeatBucket(kv, name);
    const base = {
      schema: 1 as const,
      state: 'STABLE' as const,
      mapVersionSeen: 2,
      load: { chambers: 3, inflight: 0, processedTotal: 10 },
      intervalSeconds: 2,
      startedAt: T,
      sentAt: T,
    };
    await hb.publish({ ...base, defenderId: 'defender-1' });
    await hb.publish({ ...base, defenderId: 'defender-0' });
    await kv.put('defender-2', 'not json');
    await kv.put('defender-3', JSON.stringify({ ...base, defenderId: 'defender-9' }));
    await hb.remove('defender-1');
    await hb.publish({ ...base, defenderId: 'defender-4' });
    const { heartbeats, bad } = await hb.readAll();
    expect(heartbeats.map((h) => h.heartbeat.defenderId)).toEqual(['defender-0', 'defender-4']);
    expect(heartbeats[0]!.storedAt).toBeInstanceOf(Date);
    expect(bad.map((b) => [b.key, b.reason])).toEqual([
      ['defender-2', 'invalid-json'],
      ['defender-3', 'defenderId defender-9 does not match the key'],
    ]);
  });

  it('heartbeats: read all lists each defender once while heartbeats keep landing', async () => {
    // nats.js's key lister (a consumer) listed a key rewritten during the listing twice, and at
    // times never settled: seen as a duplicate defender and as a 150 s hang in membership tests.
    const name = `hb-t${++n}`;
    const hb = new HeartbeatBucket(await openBucket(nc, name), name);
    const ids = Array.from({ length: 8 }, (_, i) => `defender-${i}`);
    const beat = (defenderId: string) =>
      hb.publish({
        schema: 1,
        defenderId,
        state: 'FOLLOWER',
        mapVersionSeen: 0,
        load: { chambers: 0, inflight: 0, processedTotal: 0 },
        intervalSeconds: 1,
        startedAt: T,
        sentAt: new Date().toISOString(),
      });
    await Promise.all(ids.map(beat));
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) await beat(ids[i % ids.length]!);
    })();
    try {
      for (let round = 0; round < 40; round++) {
        const { heartbeats, bad } = await hb.readAll();
        expect(bad).toEqual([]);
        expect(heartbeats.map((h) => h.heartbeat.defenderId)).toEqual(ids);
      }
    } finally {
      writing = false;
      await writer;
    }
  });

  it('a NATS outage surfaces as a retryable NatsUnavailableError and heals without a new connection', async () => {
    // TLS and deploy/nats/auth.conf's users: the controller's user publishes to its bucket, as in production.
    const srv = await startSecuredNatsServer();
    const c = await connect({
      ...srv.connectOptions('controller'),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 100,
      // A hang guard for the first dial (TLS included), not a figure under test: a busy machine takes more than 1 s.
      timeout: 15_000,
    });
    try {
      const kv = await openBucket(c, DEFAULT_BUCKETS.assignments);
      const b = new AssignmentMapBucket(kv, DEFAULT_BUCKETS.assignments);
      const r1 = await b.publish(mapV(1, '1'), null);
      await srv.server.halt();
      const err = await b.publish(mapV(2, '1'), r1).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NatsUnavailableError);
      expect((err as NatsUnavailableError).retryable).toBe(true);
      await srv.server.start();
      await waitFor(
        'publish after recovery',
        async () => {
          try {
            await b.publish(mapV(2, '1'), r1);
            return true;
          } catch (e) {
            if (e instanceof NatsUnavailableError) return false;
            throw e;
          }
        },
        20_000,
        200,
      );
      expect((await b.read())?.map.version).toBe(2);
    } finally {
      await c.close();
      await srv.stop();
    }
  });

  describe('chunked map (ADR 0009)', () => {
    async function open(history = 1): Promise<{ kv: KV; name: string }> {
      const name = `chunks-t${++n}`;
      return { kv: await openBucket(nc, name, { history }), name };
    }

    /** Every stored value of the bucket (head and chunks), by key. */
    async function storedValues(kv: KV, name: string): Promise<Map<string, number>> {
      const sizes = new Map<string, number>();
      for (const key of await listKeys(kv, name)) {
        const e = await kv.get(key);
        if (e?.operation === 'PUT') sizes.set(key, e.value.byteLength);
      }
      return sizes;
    }

    it('20,000 chambers: publish, read and watch round trip, every stored value under 256 KB', async () => {
      const { kv, name } = await open(5);
      const published: MapPublication[] = [];
      const b = new AssignmentMapBucket(kv, name, { onPublished: (p) => published.push(p) });
      const seen: StoredMap[] = [];
      const w = await b.watch({ onMap: (s) => void seen.push(s) });

      const v1 = bigMap(1, 20_000, 200, '12345678901234567890', 1_764_237_600_000);
      const r1 = await b.publish(v1, null);
      const v2 = bigMap(2, 20_000, 200, '12345678901234567890', 1_764_237_700_000);
      const p2 = await b.publishMeasured(v2, r1);

      expect(await b.read()).toEqual({ map: v2, revision: p2.revision });
      await waitFor('both maps watched', async () => seen.length === 2, 30_000);
      w.stop();
      await w.done;
      expect(seen).toEqual([
        { map: v1, revision: r1 },
        { map: v2, revision: p2.revision },
      ]);

      const sizes = await storedValues(kv, name);
      const head = parseStoredMapHead((await kv.get(ASSIGNMENT_MAP_KEY))!.value);
      expect(head.kind).toBe('chunked');
      expect(sizes.size).toBe(1 + published[0]!.chunks + p2.chunks); // head, slot 0 (v1), slot 1 (v2)
      expect(p2.chunks).toBeGreaterThan(4);
      for (const [key, bytes] of sizes) expect([key, bytes < MAX_MAP_VALUE_BYTES]).toEqual([key, true]);
      expect(p2.maxValueBytes).toBe(
        Math.max(
          ...[...sizes]
            .filter(([k]) => k === ASSIGNMENT_MAP_KEY || k.startsWith(`${ASSIGNMENT_MAP_KEY}.1.`))
            .map(([, s]) => s),
        ),
      );
      expect(p2.bytes).toBeGreaterThan(1_000_000); // about 52 bytes per chamber, every chamber moved
      expect(published.map((p) => p.revision)).toEqual([r1, p2.revision]);

      // Defenders read only the chunks holding their chambers (the lowest reads the whole map): exactly theirs.
      const wholeBytes = (await b.readMeasured(() => null)).bytes;
      expect(wholeBytes).toBe(p2.bytes);
      const perDefender: number[] = [];
      for (let d = 0; d < 200; d++) {
        const id = `defender-${d}`;
        const { stored, bytes } = await b.readMeasured(() => id);
        const own = stored!;
        const mine = Object.keys(v2.assignments).filter((c) => v2.assignments[c] === id);
        expect({ id, owner: own.owner, revision: own.revision, chambers: Object.keys(own.map.assignments).sort() }).toEqual({
          id,
          owner: id,
          revision: p2.revision,
          chambers: mine.sort(),
        });
        perDefender.push(bytes);
      }
      // Head and at most two of the chunks each.
      expect(Math.max(...perDefender)).toBeLessThan(p2.headBytes + 2 * DEFAULT_CHUNK_BYTES + 1);
      expect(Math.max(...perDefender)).toBeLessThan(wholeBytes / 10);

      // The figures for docs/architecture.md (reported, not asserted): 20 more publications, each read back.
      let rev = p2.revision;
      const readMs: number[] = [];
      for (let v = 3; v <= 22; v++) {
        rev = await b.publish({ ...(v % 2 ? v1 : v2), version: v }, rev);
        const t = performance.now();
        expect((await b.read())?.map.version).toBe(v);
        readMs.push(performance.now() - t);
      }
      const q = (xs: number[], f: number) =>
        [...xs].sort((a, c) => a - c)[Math.min(xs.length - 1, Math.floor(f * xs.length))];
      const publishMs = published.slice(2).map((p) => p.ms);
      const last = published[published.length - 1]!;
      // The workspace's tmp/ (Jest runs in the project's directory).
      const tmp = join(__dirname, '..', '..', '..', '..', 'tmp');
      mkdirSync(tmp, { recursive: true });
      writeFileSync(
        join(tmp, 'assignment-map-20000.json'),
        JSON.stringify(
          {
            chambers: 20_000,
            defenders: 200,
            headBytes: last.headBytes,
            bytes: last.bytes,
            chunks: last.chunks,
            largestValueBytes: last.maxValueBytes,
            publishMs: { p50: q(publishMs, 0.5), p99: q(publishMs, 0.99), max: q(publishMs, 1) },
            readMs: { p50: q(readMs, 0.5), p99: q(readMs, 0.99), max: q(readMs, 1) },
            // Per map change: what each of the 200 defenders reads (head and the chunks holding its
            // chambers), against the whole map (what the lowest defender, the controller and observers read).
            bytesReadPerDefender: {
              whole: wholeBytes,
              min: q(perDefender, 0),
              p50: q(perDefender, 0.5),
              max: q(perDefender, 1),
              mean: Math.round(perDefender.reduce((a, c) => a + c, 0) / perDefender.length),
              allDefendersTotal: wholeBytes + perDefender.slice(1).reduce((a, c) => a + c, 0),
              allDefendersWholeMapTotal: 200 * wholeBytes,
            },
          },
          null,
          2,
        ),
      );
    });

    it('compare-and-set conflicts are still reported and leave the current map intact', async () => {
      const { kv, name } = await open();
      const b = new AssignmentMapBucket(kv, name, { chunkBytes: 2048 });
      const r1 = await b.publish(versionedMap(1, 300), null);
      await expect(b.publish(versionedMap(2, 300), null)).rejects.toBeInstanceOf(RevisionConflictError);
      const r2 = await b.publish(versionedMap(2, 300), r1);
      await expect(b.publish(versionedMap(3, 300), r1)).rejects.toBeInstanceOf(RevisionConflictError);
      // The losing writer raced past the early check: its chunks went to the slot the head does not use.
      const racing = new AssignmentMapBucket(kv, name, { chunkBytes: 2048 });
      const [a, c] = await Promise.allSettled([
        racing.publish(versionedMap(3, 300), r2),
        b.publish(versionedMap(3, 300, '8'), r2),
      ]);
      expect([a.status, c.status].sort()).toEqual(['fulfilled', 'rejected']);
      const stored = (await b.read())!;
      expect(mixProblem(stored.map)).toBeNull();
      expect(stored.map.version).toBe(3);
    });

    it('reads a whole map stored before ADR 0009 (rolling upgrade) and publishes chunked over it', async () => {
      const { kv, name } = await open(5);
      const b = new AssignmentMapBucket(kv, name, { chunkBytes: 2048 });
      const legacy = versionedMap(4, 200);
      const r = await kv.put(ASSIGNMENT_MAP_KEY, JSON.stringify(legacy));
      expect(await b.read()).toEqual({ map: legacy, revision: r });
      const seen: StoredMap[] = [];
      const w = await b.watch({ onMap: (s) => void seen.push(s) });
      const r5 = await b.publish(versionedMap(5, 200), r);
      await waitFor('the chunked map watched', async () => seen.length === 2, 30_000);
      w.stop();
      await w.done;
      expect(seen.map((s) => s.map)).toEqual([legacy, versionedMap(5, 200)]);
      expect((await b.history()).map((s) => [s.revision, s.map.version])).toEqual([
        [r, 4],
        [r5, 5],
      ]);
    });

    it('refuses a head over 256 KB (thousands of defenders) before writing anything', async () => {
      const { kv, name } = await open();
      const b = new AssignmentMapBucket(kv, name);
      await expect(b.publish(bigMap(1, 6000, 6000), null)).rejects.toThrow(
        /head would be \d+ bytes \(6000 defenders\), over 262144/,
      );
      expect(await listKeys(kv, name)).toEqual([]);
      expect(await b.read()).toBeNull();
    });

    it('a publication in progress (chunks written, head not yet) changes nothing a reader sees', async () => {
      const { kv, name } = await open();
      const b = new AssignmentMapBucket(kv, name, { chunkBytes: 2048 });
      const r1 = await b.publish(versionedMap(1, 400), null);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let chunksWritten!: () => void;
      const atGate = new Promise<void>((resolve) => (chunksWritten = resolve));
      // The writer's KV stops right before the head's compare-and-set.
      const paused = new Proxy(kv, {
        get: (target, prop, receiver) =>
          prop === 'update'
            ? async (...args: Parameters<KV['update']>) => {
                chunksWritten();
                await gate;
                return target.update(...args);
              }
            : Reflect.get(target, prop, receiver),
      });
      const writer = new AssignmentMapBucket(paused, name, { chunkBytes: 2048 });
      const publishing = writer.publish(versionedMap(2, 400), r1);
      await atGate;
      const during = (await b.read())!;
      expect([during.revision, during.map.version, mixProblem(during.map)]).toEqual([r1, 1, null]);
      release();
      const r2 = await publishing;
      const after = (await b.read())!;
      expect([after.revision, after.map.version, mixProblem(after.map)]).toEqual([r2, 2, null]);
    });

    it('a head overtaken twice (its slot rewritten) is never assembled: resolveEntry says so, read() moves on', async () => {
      const { kv, name } = await open(1);
      const b = new AssignmentMapBucket(kv, name, { chunkBytes: 2048 });
      const r1 = await b.publish(versionedMap(1, 400), null);
      const e1 = (await kv.get(ASSIGNMENT_MAP_KEY))!;
      const r2 = await b.publish(versionedMap(2, 400), r1);
      const e2 = (await kv.get(ASSIGNMENT_MAP_KEY))!;
      expect(await b.resolveEntry(e1)).toEqual(versionedMap(1, 400)); // slot 0 still holds v1
      await b.publish(versionedMap(3, 400), r2); // rewrites slot 0
      expect(await b.resolveEntry(e1)).toBeNull();
      expect(await b.resolveEntry(e2)).toEqual(versionedMap(2, 400));
      expect((await b.read())!.map.version).toBe(3);
    });

    /** `kv` whose head reads return `stale` (a controller paused since then). */
    function staleHead(kv: KV, stale: KvEntry): KV {
      return new Proxy(kv, {
        get: (target, prop, receiver) =>
          prop === 'get'
            ? async (...args: Parameters<KV['get']>) =>
                args[0] === ASSIGNMENT_MAP_KEY && !args[1] ? stale : target.get(...args)
            : Reflect.get(target, prop, receiver),
      });
    }

    it("terms alternate slot pairs: the previous term's deposed leader never touches the current chunks; the key set stays bounded", async () => {
      const { kv, name } = await open(1);
      const b = new AssignmentMapBucket(kv, name, { chunkBytes: 2048 });
      let r = await b.publish(versionedMap(1, 300, '5'), null); // odd token: slot 2
      const stale = (await kv.get(ASSIGNMENT_MAP_KEY))!;
      r = await b.publish(versionedMap(2, 300, '6'), r); // even token: slot 0
      // Token 5's controller, paused since v1, publishes from its view: chunks into slot 3, head refused.
      const deposed = new AssignmentMapBucket(staleHead(kv, stale), name, { chunkBytes: 2048 });
      await expect(deposed.publish(versionedMap(2, 300, '5'), stale.revision)).rejects.toBeInstanceOf(
        RevisionConflictError,
      );
      expect(await b.read()).toEqual({ map: versionedMap(2, 300, '6'), revision: r });
      expect(await listKeys(kv, name)).toContain(assignmentChunkKey(3, 0));
      // Two maps per term (tokens 7 to 10): each term alternates within its pair.
      for (let v = 3; v <= 10; v++)
        r = await b.publish(versionedMap(v, 300, String(7 + Math.floor((v - 3) / 2))), r);
      const slots = new Set(
        (await listKeys(kv, name)).filter((k) => k !== ASSIGNMENT_MAP_KEY).map((k) => k.split('.')[1]),
      );
      expect([...slots].sort()).toEqual(['0', '1', '2', '3']);
      expect((await b.read())!.map).toEqual(versionedMap(10, 300, '10'));
    });

    it('a deposed leader two terms back rewriting the current slot: the head still reads its exact chunks while history keeps them, else fails closed, never a mix', async () => {
      for (const history of [5, 1]) {
        const { kv, name } = await open(history);
        const b = new AssignmentMapBucket(kv, name, { chunkBytes: 2048 });
        let r = await b.publish(versionedMap(1, 300, '5'), null); // slot 2
        const stale = (await kv.get(ASSIGNMENT_MAP_KEY))!;
        r = await b.publish(versionedMap(2, 300, '7'), r); // same pair, the head uses 2: slot 3
        // Token 5, still believing its v1 head (slot 2) is current, rewrites slot 3 and loses the head.
        const deposed = new AssignmentMapBucket(staleHead(kv, stale), name, { chunkBytes: 2048 });
        await expect(deposed.publish(versionedMap(2, 300, '5'), stale.revision)).rejects.toBeInstanceOf(
          RevisionConflictError,
        );
        if (history > 1) expect((await b.read())!.map).toEqual(versionedMap(2, 300, '7'));
        else await expect(b.read()).rejects.toThrow(/a chunk is no longer stored/);
        r = await b.publish(versionedMap(3, 300, '7'), r); // the next publication heals it
        expect((await b.read())!.map).toEqual(versionedMap(3, 300, '7'));
      }
    });

    it('concurrent readers never see a mix of two versions while one writer publishes back to back', async () => {
      const { kv, name } = await open(1);
      const CHAMBERS = 2000;
      const VERSIONS = 40;
      const writer = new AssignmentMapBucket(kv, name, { chunkBytes: 4096 }); // about 25 chunks per map
      const problems: string[] = [];
      const check = (who: string, m: AssignmentMap) => {
        const p = mixProblem(m);
        if (p) problems.push(`${who}: ${p}`);
      };
      let rev = await writer.publish(versionedMap(1, CHAMBERS), null);
      let writing = true;
      let publications = 1;
      let wake: () => void = () => undefined;
      let published = new Promise<void>((r) => (wake = r));
      const overtaken = async (since: number) => {
        while (writing && publications < since + 2) await published;
      };
      const slow = (k: KV) => overtakenReads(k, overtaken, () => publications);

      // Readers: read() in a loop, on their own connections and bucket handles; all but the first are
      // overtaken by two publications between reading a head and reading its chunks, every other read.
      const readerConns: NatsConnection[] = await Promise.all(
        [1, 2, 3].map(() => connect(testNatsConnectOptions())),
      );
      const readVersions: number[][] = readerConns.map(() => []);
      // Reader 2 reads as defender-1 does (only the chunks holding its chambers).
      const readers = readerConns.map(async (rnc, i) => {
        const rkv = await openBucket(rnc, name, { history: 1 });
        const rb = new AssignmentMapBucket(i === 0 ? rkv : slow(rkv), name);
        while (writing) {
          if (i === 2) {
            const s = (await rb.read(() => 'defender-1'))!;
            const p = ownMixProblem(s, 'defender-1');
            if (p) problems.push(`reader ${i}: ${p}`);
            readVersions[i]!.push(s.map.version);
            continue;
          }
          const s = (await rb.read())!;
          check(`reader ${i}`, s.map);
          readVersions[i]!.push(s.map.version);
        }
      });
      // Watchers: the defender's watch (newer maps only) and an observer's (every publication), overtaken too.
      const watched: number[][] = [[], [], []];
      const watchers = [
        await new AssignmentMapBucket(slow(kv), name).watch({
          onMap: (s) => {
            check('watch', s.map);
            watched[0]!.push(s.map.version);
          },
        }),
        await new AssignmentMapBucket(slow(kv), name).watchPublications({
          onMap: (s) => {
            check('watchPublications', s.map);
            watched[1]!.push(s.map.version);
          },
        }),
        // A defender's watch: only defender-2's chunks.
        await new AssignmentMapBucket(slow(kv), name).watch(
          {
            onMap: (s) => {
              const p = ownMixProblem(s, 'defender-2');
              if (p) problems.push(`scoped watch: ${p}`);
              watched[2]!.push(s.map.version);
            },
          },
          undefined,
          () => 'defender-2',
        ),
      ];

      for (let v = 2; v <= VERSIONS; v++) {
        rev = await writer.publish(versionedMap(v, CHAMBERS), rev);
        publications++;
        const w = wake;
        published = new Promise<void>((r) => (wake = r));
        w();
      }
      writing = false;
      wake();
      await Promise.all(readers);
      await waitFor(
        'the watchers reach the last version',
        async () => watched.every((w) => w.at(-1) === VERSIONS),
        60_000,
      );
      for (const w of watchers) w.stop();
      await Promise.all(watchers.map((w) => w.done));
      await Promise.all(readerConns.map((c) => c.drain()));

      expect(problems).toEqual([]);
      for (const w of watched)
        expect(w).toEqual([...w].sort((a, b) => a - b).filter((v, i, all) => all.indexOf(v) === i)); // strictly increasing
      for (const r of readVersions) expect(r).toEqual([...r].sort((a, b) => a - b)); // a reader never goes back
      expect(new Set(readVersions.flat()).size).toBeGreaterThan(1); // the reads overlapped the publications
    });
  });
});
