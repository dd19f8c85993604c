import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RECORD_LIMITS, type DefenderStore, type JsonObject } from '@defender/contracts';
import { openStore } from '@defender/store';
import { CtlError } from './commands';
import { REPO } from './context';
import { formatStrategyShow, putStrategy, readStrategyFile, showStrategy } from './strategy';

const doc = (name: string, scope: JsonObject = {}): JsonObject => ({ schemaVersion: 1, name, scope, indicators: [{ id: 'm', svid: '*', statistic: 'mean' }] });
const NOW = new Date(Date.UTC(2026, 10, 27, 12));

/** `defenderctl strategy put|show` against a real SQLite store. */
describe('defenderctl strategy', () => {
  let dir: string;
  let db: string;
  let store: DefenderStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ctl-strategy-'));
    db = join(dir, 'store.db');
    store = await openStore({ kind: 'sqlite', sqlite: { filename: db } });
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('put validates and stores the next version of a documented scope; show prints the lookup order and the winner', async () => {
    expect(await putStrategy(store, { scope: 'default', document: doc('fab-wide'), author: 'alice' }, NOW)).toEqual({
      scope: 'default',
      version: 1,
      name: 'fab-wide',
      author: 'alice',
      createdAt: NOW.toISOString(),
    });
    expect((await putStrategy(store, { scope: 'default', document: doc('fab-wide-2'), author: 'bob' }, NOW)).version).toBe(2);
    await putStrategy(store, { scope: 'chamber/ETCH01:PM2', document: doc('pm2', { chamber: 'ETCH01:PM2' }), author: 'carol' }, NOW);
    // Stored as given.
    expect((await store.strategies.get('chamber/ETCH01:PM2'))?.document).toEqual(doc('pm2', { chamber: 'ETCH01:PM2' }));

    const shown = await showStrategy(store, 'ETCH01:PM2', 'POLY');
    expect(shown.lookup.map((r) => [r.scope, r.deprecated, r.version])).toEqual([
      ['chamber/ETCH01:PM2/recipe/POLY', false, null],
      ['chamber/ETCH01:PM2', false, 1],
      ['ETCH01:PM2', true, null],
      ['recipe/POLY', false, null],
      ['default', false, 2],
    ]);
    expect(shown.winner).toEqual({ scope: 'chamber/ETCH01:PM2', version: 1 });
    expect(shown.winnerProblems).toEqual([]);
    const text = formatStrategyShow(shown);
    expect(text.split('\n')[0]).toBe('runs of ETCH01:PM2 with recipe POLY are judged by chamber/ETCH01:PM2 v1');
    expect(text).toMatch(/2\. chamber\/ETCH01:PM2 +v1 "pm2" by carol at 2026-11-27T12:00:00.000Z {2}<- wins/);
    expect(text).toMatch(/5\. default +v2 "fab-wide-2" by bob .* \(not used: a more specific scope wins\)/);

    // Another chamber: nothing more specific, so the default scope; without a recipe, no recipe scopes.
    expect((await showStrategy(store, 'CVD09:PM1', 'POLY')).winner).toEqual({ scope: 'default', version: 2 });
    expect((await showStrategy(store, 'CVD09:PM1')).lookup.map((r) => r.scope)).toEqual(['chamber/CVD09:PM1', 'CVD09:PM1', 'default']);
  });

  it('show names the built-in default when no scope holds a strategy, and the legacy key as deprecated', async () => {
    const none = await showStrategy(store, 'ETCH01:PM2', 'POLY');
    expect(none.winner).toBeNull();
    expect(formatStrategyShow(none).split('\n')[0]).toBe('runs of ETCH01:PM2 with recipe POLY are judged by the built-in default strategy (no strategy stored in any of these scopes)');
    // Data written the old way (the legacy key) is read, and show says how to move it.
    await store.strategies.put({ scope: 'ETCH01:PM2', version: 1, document: doc('old'), createdAt: NOW, author: 'legacy' });
    const legacy = await showStrategy(store, 'ETCH01:PM2', 'POLY');
    expect(legacy.winner).toEqual({ scope: 'ETCH01:PM2', version: 1 });
    expect(formatStrategyShow(legacy)).toContain('note: ETCH01:PM2 is the deprecated legacy key; store its strategy under chamber/ETCH01:PM2');
  });

  it('show reports a winner that cannot judge a run (its runs are dead-lettered), not a less specific scope', async () => {
    await putStrategy(store, { scope: 'default', document: doc('fallback'), author: 'a' }, NOW);
    // Written by something other than defenderctl, which would refuse it.
    await store.strategies.put({ scope: 'chamber/ETCH01:PM2', version: 1, document: doc('elsewhere', { chamber: 'CVD09:PM1' }), createdAt: NOW, author: 'x' });
    const shown = await showStrategy(store, 'ETCH01:PM2');
    expect(shown.winner).toEqual({ scope: 'chamber/ETCH01:PM2', version: 1 });
    expect(shown.winnerProblems).toEqual([
      { path: 'scope.chamber', message: 'names chamber CVD09:PM1 but it is stored under scope "chamber/ETCH01:PM2", for chamber ETCH01:PM2' },
    ]);
    expect(formatStrategyShow(shown)).toContain('PROBLEM: the winning strategy cannot judge a run; these runs are dead-lettered invalid-strategy');
  });

  it('put refuses an invalid document, a scope mismatch, a bad or legacy scope with every issue listed, storing nothing', async () => {
    const refusal = async (scope: string, document: JsonObject): Promise<string> => {
      const err = await putStrategy(store, { scope, document, author: 'a', source: 'doc.json' }, NOW).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(CtlError);
      return (err as Error).message;
    };
    const broken = { schemaVersion: 1, name: '', indicators: [{ id: 'bad id!', svid: '*', statistic: 'mean' }] };
    const message = await refusal('chamber/ETCH01:PM2', broken);
    expect(message.split('\n')[0]).toBe('strategy document doc.json is invalid for scope chamber/ETCH01:PM2 (nothing stored):');
    expect(message).toMatch(/^ {2}name: /m);
    expect(message).toMatch(/^ {2}indicators\.0\.id: /m);
    expect(await refusal('chamber/ETCH01:PM2/recipe/POLY', doc('x', { chamber: 'ETCH01:PM2', recipe: 'R2' }))).toContain(
      'scope.recipe: names recipe R2 but it is stored under scope "chamber/ETCH01:PM2/recipe/POLY", for recipe POLY',
    );
    expect(await refusal('recipe/POLY', doc('x', { chamber: 'ETCH01:PM2' }))).toContain('scope.chamber: names chamber ETCH01:PM2 but it is stored under scope "recipe/POLY", which applies to every chamber');
    expect(await refusal('ETCH01:PM2', doc('x'))).toBe('"ETCH01:PM2" is the deprecated legacy key: store the strategy under chamber/ETCH01:PM2 (nothing stored)');
    expect(await refusal('chamber/ETCH01', doc('x'))).toMatch(/is not a strategy scope/);
    const huge = { ...doc('huge'), padding: 'x'.repeat(RECORD_LIMITS.jsonBytes) };
    expect(await refusal('default', huge)).toMatch(/serializes to \d+ characters; at most 1048576/);
    for (const scope of ['chamber/ETCH01:PM2', 'chamber/ETCH01:PM2/recipe/POLY', 'recipe/POLY', 'ETCH01:PM2', 'default']) {
      expect(await store.strategies.versions(scope)).toEqual([]);
    }
  });

  it('reads a document file: refuses a missing, oversized, non-JSON or non-object file', async () => {
    const file = (name: string, text: string) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    expect(await readStrategyFile(file('ok.json', JSON.stringify(doc('ok'))))).toEqual(doc('ok'));
    await expect(readStrategyFile(join(dir, 'missing.json'))).rejects.toThrow(/cannot read/);
    await expect(readStrategyFile(file('big.json', ' '.repeat(RECORD_LIMITS.jsonBytes + 1)))).rejects.toThrow(/a strategy document may be at most 1048576/);
    await expect(readStrategyFile(file('bad.json', '{"schemaVersion": 1,'))).rejects.toThrow(/is not JSON/);
    await expect(readStrategyFile(file('list.json', '[1]'))).rejects.toThrow(/must hold a JSON object/);
  });

  it('the CLI: put of an invalid document exits 1 listing its issues and stores nothing; a valid one, then show', async () => {
    await store.close();
    const ctl = (...args: string[]) =>
      spawnSync(join(REPO, 'tools/defenderctl/defenderctl'), ['--store', `sqlite:${db}`, ...args], { env: { PATH: process.env['PATH'] ?? '', USER: 'ops' }, encoding: 'utf8', timeout: 60_000 });
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ schemaVersion: 1, name: 'bad', indicators: [{ id: 'bad id!', svid: '*', statistic: 'nope' }] }));
    const refused = ctl('strategy', 'put', '--scope', 'chamber/ETCH01:PM2', '--file', bad);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`defenderctl: strategy document ${bad} is invalid for scope chamber/ETCH01:PM2 (nothing stored):`);
    expect(refused.stderr).toMatch(/indicators\.0\.id: /);
    expect(refused.stderr).toMatch(/indicators\.0\.statistic: /);

    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify(doc('pm2')));
    const stored = ctl('strategy', 'put', '--scope', 'chamber/ETCH01:PM2', '--file', good);
    expect({ status: stored.status, stdout: stored.stdout, stderr: stored.stderr }).toEqual({ status: 0, stdout: 'stored chamber/ETCH01:PM2 v1 "pm2" (by ops)\n', stderr: '' });
    const shown = ctl('--json', 'strategy', 'show', 'ETCH01:PM2', '--recipe', 'POLY');
    expect(shown.status).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ chamber: 'ETCH01:PM2', recipe: 'POLY', winner: { scope: 'chamber/ETCH01:PM2', version: 1 }, winnerProblems: [] });
    const usage = ctl('strategy', 'show', 'ETCH01:PM2', '--scope', 'default');
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('strategy show does not take --scope');

    store = await openStore({ kind: 'sqlite', sqlite: { filename: db } });
    expect(await store.strategies.versions('chamber/ETCH01:PM2')).toEqual([1]);
  }, 120_000);
});
