/**
 * One "process" of the multi-process SQLite race (sqlite-store.int.spec.ts):
 *   node -r ./tools/scripts/register.js libs/store/src/testing/sqlite-race-worker.ts <file> <a|b> <runs>
 * Both open the (fresh) file at once, print `ready` and wait for `<file>.go` (the parent's start
 * signal). `a` claims epoch 1 and commits runs 1..N+1; `b` waits until a quarter is applied, claims
 * epoch 2 and commits from just below the high-water mark to N (redeliveries included). Prints one
 * JSON line per attempt; exits 0 unless something other than fencing went wrong.
 */
import { existsSync } from 'node:fs';
import { FencedError } from '@defender/contracts';
import { SqliteStore } from '../lib/sqlite/sqlite-store';
import { commit, sleep } from './fixtures';

async function main(): Promise<void> {
  const [file, role, runs] = process.argv.slice(2);
  const n = Number(runs);
  if (!file || (role !== 'a' && role !== 'b') || !Number.isInteger(n)) throw new Error('usage: sqlite-race-worker.ts <file> <a|b> <runs>');
  const store = await SqliteStore.open({ filename: file, busyTimeoutMs: 20_000 });
  const chamber = { toolId: 'race', chamberId: 'C1' };
  process.stdout.write(`${JSON.stringify({ role, ready: true })}\n`);
  while (!existsSync(`${file}.go`)) await sleep(5);
  const epoch = role === 'a' ? 1 : 2;
  let from = 1;
  if (role === 'b') {
    while (((await store.chamberState.get(chamber))?.highWaterMark ?? 0) < n / 4) await sleep(2);
    const st = await store.chamberState.claim(chamber, epoch, 'owner-b', new Date());
    from = Math.max(1, st.highWaterMark - 2);
    process.stdout.write(`${JSON.stringify({ role, claimedAt: st.highWaterMark })}\n`);
  } else {
    await store.chamberState.claim(chamber, epoch, 'owner-a', new Date());
  }
  for (let seq = from; seq <= n + (role === 'a' ? 1 : 0); seq++) {
    let outcome: string;
    try {
      outcome = (await store.chamberState.commitRun(commit(chamber, epoch, seq))).outcome;
      // The first owner is paced so the takeover lands mid-stream.
      if (role === 'a') await sleep(1);
    } catch (err) {
      if (!(err instanceof FencedError)) throw err;
      outcome = 'fenced';
    }
    process.stdout.write(`${JSON.stringify({ role, seq, outcome })}\n`);
  }
  await store.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
