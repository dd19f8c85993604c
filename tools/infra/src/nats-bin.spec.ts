import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureNatsServer, MIN_NATS_VERSION, NatsServerUnavailableError, PINNED_NATS_SERVER, pinnedNatsServerPath, versionAtLeast } from './nats';

describe('versionAtLeast', () => {
  it.each([
    ['2.10.0', '2.9.10', true],
    ['2.9.10', '2.10.0', false],
    ['2.10.27', '2.10.27', true],
    ['2.10', '2.10.0', true],
    ['3.0.0', '2.99.99', true],
    ['2.10.26', '2.10.27', false],
  ])('%s >= %s: %s', (a, b, expected) => {
    expect(versionAtLeast(a, b)).toBe(expected);
  });

  it('refuses what is not a dotted version', () => {
    expect(() => versionAtLeast('2.x', '2.10.0')).toThrow('not a dotted version');
  });

  it('the pinned server is at least the minimum', () => {
    expect(versionAtLeast(PINNED_NATS_SERVER.version, MIN_NATS_VERSION)).toBe(true);
  });
});

describe('ensureNatsServer', () => {
  const saved = { ...process.env };
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'defender-nats-bin-'));
  });

  afterEach(() => {
    process.env = { ...saved };
    rmSync(dir, { recursive: true, force: true });
  });

  /** An executable that answers `--version` as nats-server `version` does. */
  function fakeServer(path: string, version: string): string {
    writeFileSync(path, `#!/bin/sh\necho "nats-server: v${version}"\n`);
    chmodSync(path, 0o755);
    return path;
  }

  it('takes NATS_SERVER_BIN as given, whatever its version, and refuses one that does not exist', () => {
    process.env['NATS_SERVER_BIN'] = fakeServer(join(dir, 'old-nats'), '2.9.10');
    expect(ensureNatsServer()).toBe(join(dir, 'old-nats'));
    process.env['NATS_SERVER_BIN'] = join(dir, 'missing');
    expect(() => ensureNatsServer()).toThrow(NatsServerUnavailableError);
  });

  /** No NATS_SERVER_BIN, an empty cache, and a server of `version` first on PATH (returned). */
  function serverOnPath(version: string): string {
    delete process.env['NATS_SERVER_BIN'];
    process.env['NATS_CACHE_DIR'] = join(dir, 'cache');
    mkdirSync(join(dir, 'bin'));
    process.env['PATH'] = `${join(dir, 'bin')}:${saved['PATH'] ?? ''}`;
    return fakeServer(join(dir, 'bin', 'nats-server'), version);
  }

  it('takes a server on PATH that is new enough', () => {
    const onPath = serverOnPath('2.11.4');
    expect(ensureNatsServer()).toBe(onPath);
  });

  it('prefers the pinned server, once unpacked, to an older one on PATH', () => {
    serverOnPath('2.9.10');
    const pinned = pinnedNatsServerPath();
    expect(pinned).toBe(join(dir, 'cache', PINNED_NATS_SERVER.version, 'nats-server'));
    mkdirSync(join(dir, 'cache', PINNED_NATS_SERVER.version), { recursive: true });
    fakeServer(pinned, PINNED_NATS_SERVER.version);
    expect(ensureNatsServer()).toBe(pinned);
  });
});
