import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkWarmState, readWarmState, restoreWarmState, saveWarmState, type StorePaths } from './warm-state';

const key = { chambers: 5000, seed: 1, warmupRuns: 31, defenders: 2 };
const meta = { ...key, tag: 'bench1-42', commit: 'abc123', node: 'v24.21.0', savedAt: '2026-11-29T14:00:00.000Z', warmup: { runs: 155_000, seconds: 4640 } };

describe('saved warm-up (FAB_WARM_STATE)', () => {
  let root: string;
  let live: StorePaths;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'warm-state-spec-'));
    live = { natsDir: join(root, 'run', 'nats'), dbFile: join(root, 'run', 'defender.db') };
    mkdirSync(join(live.natsDir, 'jetstream', '$G', 'streams', 'DC'), { recursive: true });
    writeFileSync(join(live.natsDir, 'jetstream', '$G', 'streams', 'DC', 'meta.inf'), 'stream');
    writeFileSync(live.dbFile, 'db pages');
    writeFileSync(`${live.dbFile}-wal`, 'wal frames');
    writeFileSync(`${live.dbFile}-shm`, 'index');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('reads nothing from a folder with no saved warm-up', () => {
    expect(readWarmState(join(root, 'none'))).toBeUndefined();
  });

  it('saves both stores and restores them under the new run\'s names, with the measured warm-up', () => {
    const saved = join(root, 'warm');
    saveWarmState(saved, live, meta);
    const m = readWarmState<{ runs: number }>(saved);
    expect(m).toMatchObject({ ...meta, format: 1, dbFile: 'defender.db' });
    expect(m?.warmup.runs).toBe(155_000);
    expect(readdirSync(saved).sort()).toEqual(['defender.db', 'defender.db-wal', 'manifest.json', 'nats']);

    const next: StorePaths = { natsDir: join(root, 'next', 'nats'), dbFile: join(root, 'next', 'store.db') };
    restoreWarmState(saved, m!, next);
    expect(readFileSync(join(next.natsDir, 'jetstream', '$G', 'streams', 'DC', 'meta.inf'), 'utf8')).toBe('stream');
    expect(readFileSync(next.dbFile, 'utf8')).toBe('db pages');
    expect(readFileSync(`${next.dbFile}-wal`, 'utf8')).toBe('wal frames');
    expect(existsSync(`${next.dbFile}-shm`)).toBe(false);
  });

  it('refuses to restore over stores that exist', () => {
    const saved = join(root, 'warm');
    saveWarmState(saved, live, meta);
    expect(() => restoreWarmState(saved, readWarmState(saved)!, live)).toThrow(/exists already/);
  });

  it('names every difference between the saved warm-up and the run that asks for it', () => {
    expect(() => checkWarmState(key, key, 'x')).not.toThrow();
    expect(() => checkWarmState(key, { ...key, chambers: 1000, defenders: 4 }, 'x')).toThrow(
      'FAB_WARM_STATE x holds the warm-up of another run: chambers 5000 (this run: 1000), defenders 2 (this run: 4)',
    );
  });

  it('never overwrites a folder that holds something else, and leaves no folder that looks complete', () => {
    const other = join(root, 'other');
    mkdirSync(other);
    writeFileSync(join(other, 'notes.txt'), 'mine');
    expect(() => saveWarmState(other, live, meta)).toThrow(/not empty/);
    expect(readFileSync(join(other, 'notes.txt'), 'utf8')).toBe('mine');

    const broken = join(root, 'broken');
    expect(() => saveWarmState(broken, { ...live, natsDir: join(root, 'missing') }, meta)).toThrow();
    expect(existsSync(broken)).toBe(false);
    expect(readdirSync(root).filter((f) => f.includes('partial'))).toEqual([]);
  });

  it('rejects a manifest it cannot trust, saying what to do', () => {
    const saved = join(root, 'warm');
    saveWarmState(saved, live, meta);
    writeFileSync(join(saved, 'manifest.json'), '{"format": 1, "chambers": 5000');
    expect(() => readWarmState(saved)).toThrow(/not JSON.*remove the folder/);
    writeFileSync(join(saved, 'manifest.json'), JSON.stringify({ ...meta, format: 2, dbFile: 'defender.db' }));
    expect(() => readWarmState(saved)).toThrow(/format 2/);
    writeFileSync(join(saved, 'manifest.json'), JSON.stringify({ ...meta, format: 1, dbFile: '../etc/passwd' }));
    expect(() => readWarmState(saved)).toThrow(/no valid dbFile/);
    writeFileSync(join(saved, 'manifest.json'), JSON.stringify({ ...meta, format: 1, dbFile: 'defender.db' }));
    rmSync(join(saved, 'nats'), { recursive: true });
    expect(() => readWarmState(saved)).toThrow(/missing/);
  });
});
