import { randomBytes } from 'node:crypto';
import { Client } from 'cassandra-driver';
import { FencedError, StoreUnavailableError, type CommitRunInput, type CommitRunResult } from '@defender/contracts';
import { describeWithInfra, startTcpProxy, testCassandra, waitFor, type TcpProxy } from '@defender/infra-harness';
import { alarm, commit, event, freshChamber } from '../../testing/fixtures';
import { CassandraStore } from './cassandra-store';

// The commit LWT reaches Cassandra but its answer never comes back (or the request never arrives):
// the driver's client-side timeout leaves the outcome unknown. The store reports a retryable
// StoreUnavailableError with `outcomeUnknown`, and the caller's retry of the same commit (what the
// chamber worker's outage retry does) must end with the run applied exactly once, or fenced.

const KEYSPACE = `store_unknown_${randomBytes(3).toString('hex')}`;
/** The proxied store's request timeout: short, so a dropped answer times out soon. */
const PROXIED_TIMEOUT_MS = 2_000;

function contactPoint(): { host: string; port: number } {
  const [first] = testCassandra().contactPoints;
  const m = /^(.+):(\d+)$/.exec(first ?? '');
  return m ? { host: m[1]!, port: Number(m[2]) } : { host: first ?? '127.0.0.1', port: 9042 };
}

/** What the chamber worker does with an outage: the same call again until the store answers. */
async function untilAnswered<T>(fn: () => Promise<T>, attempts = 300): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof StoreUnavailableError) || i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Rejects with the error `p` fails with (the test fails if it succeeds). */
async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => {
      throw new Error(`expected a failure, got ${JSON.stringify(v)}`);
    },
    (err: unknown) => err,
  );
}

describeWithInfra(['cassandra'], 'Cassandra commit with an unknown outcome (answers lost on the wire)', () => {
  let admin: Client;
  let direct: CassandraStore;
  let proxy: TcpProxy;
  let proxied: CassandraStore;

  beforeAll(async () => {
    const c = testCassandra();
    admin = new Client({ contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, socketOptions: { readTimeout: 60_000 } });
    await admin.connect();
    direct = await CassandraStore.connect({ contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, keyspace: KEYSPACE, requestTimeoutMs: 30_000 });
    proxy = await startTcpProxy({ target: contactPoint() });
    proxied = await untilAnswered(() =>
      CassandraStore.connect({ contactPoints: [`127.0.0.1:${proxy.port}`], localDataCenter: c.localDataCenter, keyspace: KEYSPACE, requestTimeoutMs: PROXIED_TIMEOUT_MS }),
    );
  }, 180_000);

  afterAll(async () => {
    await proxied?.close();
    await proxy?.close();
    await direct?.close();
    await admin?.execute(`DROP KEYSPACE IF EXISTS ${KEYSPACE}`);
    await admin?.shutdown();
  }, 120_000);

  afterEach(() => proxy.heal());

  /** A run with alarms and outbox events, so a doubled commit would show in every table it writes. */
  function richCommit(ch: ReturnType<typeof freshChamber>, epoch: number, seq: number): CommitRunInput {
    return commit(ch, epoch, seq, { alarms: [alarm('R1', 'k|mean'), alarm('R2', 'k|max')], events: [event(ch, seq, 0), event(ch, seq, 1)] });
  }

  /** The run at `seq` is stored once: one run row, its alarms once, its outbox events once, the mark at `hwm`. */
  async function expectStoredOnce(ch: ReturnType<typeof freshChamber>, seq: number, hwm: number): Promise<void> {
    const history = await direct.uchart.history(ch, { limit: 100 });
    expect(history.filter((r) => r.runId === `run-${seq}`).map((r) => r.sequence)).toEqual([seq]);
    expect((await direct.alarms.ofRun(ch, seq)).map((a) => a.ruleId).sort()).toEqual(['R1', 'R2']);
    expect((await direct.outbox.pending(ch, { limit: 100 })).filter((e) => e.sequence === seq).map((e) => e.index)).toEqual([0, 1]);
    expect(await direct.chamberState.appliedRun(ch, `run-${seq}`)).toBe(seq);
    expect((await direct.chamberState.get(ch))?.highWaterMark).toBe(hwm);
  }

  /** Sends `input` through the proxy with the answer (or everything) dropped; resolves with the error. */
  async function commitLost(input: CommitRunInput, lose: 'answer' | 'request'): Promise<unknown> {
    const before = proxy.stats().bytesUp;
    if (lose === 'answer') proxy.blackholeResponses();
    else proxy.blackhole();
    const err = await failure(proxied.chamberState.commitRun(input));
    if (lose === 'answer') expect(proxy.stats().bytesUp).toBeGreaterThan(before);
    return err;
  }

  const expectUnknown = (err: unknown): void => {
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err).toMatchObject({ retryable: true, outcomeUnknown: true });
  };

  it('the answer is lost: the commit was applied; the retry finds it (already-applied), nothing doubled', async () => {
    const ch = freshChamber();
    await untilAnswered(() => proxied.chamberState.claim(ch, 1, 'defender-1', new Date()));
    await untilAnswered(() => proxied.chamberState.commitRun(richCommit(ch, 1, 1)));

    expectUnknown(await commitLost(richCommit(ch, 1, 2), 'answer'));
    // The request reached Cassandra: the run is there although its writer does not know it.
    await waitFor('the lost-answer commit to be visible', async () => (await direct.chamberState.appliedRun(ch, 'run-2')) === 2, 60_000);

    proxy.heal();
    const retried: CommitRunResult = await untilAnswered(() => proxied.chamberState.commitRun(richCommit(ch, 1, 2)));
    expect(retried.outcome).toBe('already-applied');
    expect(retried.state.highWaterMark).toBe(2);
    await expectStoredOnce(ch, 2, 2);
    // and the chamber goes on
    expect((await untilAnswered(() => proxied.chamberState.commitRun(richCommit(ch, 1, 3)))).outcome).toBe('applied');
    await expectStoredOnce(ch, 3, 3);
  }, 240_000);

  it('the request is lost: nothing was applied; the retry applies it once', async () => {
    const ch = freshChamber();
    await untilAnswered(() => proxied.chamberState.claim(ch, 1, 'defender-1', new Date()));

    expectUnknown(await commitLost(richCommit(ch, 1, 1), 'request'));
    expect(await direct.chamberState.appliedRun(ch, 'run-1')).toBeUndefined();

    proxy.heal();
    expect((await untilAnswered(() => proxied.chamberState.commitRun(richCommit(ch, 1, 1)))).outcome).toBe('applied');
    await expectStoredOnce(ch, 1, 1);
  }, 240_000);

  it('the answer is lost and a new owner claims before the retry: the old owner is fenced, the new one finds the run applied', async () => {
    const ch = freshChamber();
    await untilAnswered(() => proxied.chamberState.claim(ch, 1, 'defender-1', new Date()));

    expectUnknown(await commitLost(richCommit(ch, 1, 1), 'answer'));
    await waitFor('the lost-answer commit to be visible', async () => (await direct.chamberState.appliedRun(ch, 'run-1')) === 1, 60_000);
    const claimed = await direct.chamberState.claim(ch, 2, 'defender-2', new Date());
    expect(claimed.highWaterMark).toBe(1);

    proxy.heal();
    const fenced = await failure(untilAnswered(() => proxied.chamberState.commitRun(richCommit(ch, 1, 1))));
    expect(fenced).toBeInstanceOf(FencedError);
    expect(fenced).toMatchObject({ storedEpoch: 2 });
    // The new owner replays the same notification: found, not applied again.
    expect((await direct.chamberState.commitRun(richCommit(ch, 2, 1))).outcome).toBe('already-applied');
    // Re-published at a new sequence (any age): only the mark moves.
    expect(await direct.chamberState.commitRun({ ...richCommit(ch, 2, 5), runId: 'run-1' })).toMatchObject({
      outcome: 'duplicate-run',
      appliedSequence: 1,
    });
    await expectStoredOnce(ch, 1, 5);
  }, 240_000);

  it('the request is lost and a new owner claims before the retry: the old owner is fenced, the new one applies the run once', async () => {
    const ch = freshChamber();
    await untilAnswered(() => proxied.chamberState.claim(ch, 1, 'defender-1', new Date()));

    expectUnknown(await commitLost(richCommit(ch, 1, 1), 'request'));
    await direct.chamberState.claim(ch, 2, 'defender-2', new Date());

    proxy.heal();
    expect(await failure(untilAnswered(() => proxied.chamberState.commitRun(richCommit(ch, 1, 1))))).toBeInstanceOf(FencedError);
    expect((await direct.chamberState.commitRun(richCommit(ch, 2, 1))).outcome).toBe('applied');
    await expectStoredOnce(ch, 1, 1);
    expect((await direct.alarms.ofRun(ch, 1)).map((a) => a.epoch)).toEqual([2, 2]);
  }, 240_000);

  it('the connection breaks while the commit is in flight: a retryable StoreUnavailableError with an unknown outcome, and the retry resolves it', async () => {
    const ch = freshChamber();
    await untilAnswered(() => proxied.chamberState.claim(ch, 1, 'defender-1', new Date()));

    proxy.blackholeResponses();
    const before = proxy.stats().bytesUp;
    const pending = failure(proxied.chamberState.commitRun(richCommit(ch, 1, 1)));
    await waitFor('the commit to reach Cassandra', async () => proxy.stats().bytesUp > before && (await direct.chamberState.appliedRun(ch, 'run-1')) === 1, 60_000, 20);
    proxy.cut();
    const err = await pending;
    expectUnknown(err);

    proxy.heal();
    expect((await untilAnswered(() => proxied.chamberState.commitRun(richCommit(ch, 1, 1)))).outcome).toBe('already-applied');
    await expectStoredOnce(ch, 1, 1);
  }, 240_000);
});
