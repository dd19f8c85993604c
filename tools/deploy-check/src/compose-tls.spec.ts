import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { parse } from 'yaml';
import { banner, findNatsServer, freePort, infraRequired, waitFor } from '@defender/infra-harness';
import { checkCassandraTlsEntrypoint, checkComposeTls, CASSANDRA_TLS_ENTRYPOINT, envOf, MAKE_CERTS, mountOf, tlsPlan, TLS_SERVICE } from './lib/compose-tls';
import { listApps, readRepoFile, REPO } from './lib/repo';
import { ComposeFile, ComposeService, composeServiceApp, parseCompose } from './lib/workloads';

/**
 * TLS in docker-compose.yml. Statically: NATS and Cassandra serve only TLS with certificates the
 * one-shot `tls` service makes, and every client trusts that CA and names what the certificates
 * name. For real: deploy/tls/make-certs.sh run with the tls service's arguments (openssl), and a
 * nats-server run with the nats service's command line, configuration and certificate, which
 * refuses a plaintext client and lets every compose client in over TLS as its own NATS user.
 */

const apps = listApps().map((a) => a.name);
const read = () => parseCompose(readRepoFile('docker-compose.yml'));
const file = read();

describe('docker-compose.yml TLS', () => {
  it('NATS and Cassandra serve only TLS, every app and tool trusts the stack CA and checks the names the certificates carry', () => {
    expect(checkComposeTls(file, apps)).toEqual([]);
  });

  it('the tls service makes certificates for nats, cassandra and the election agents, each in its own volume', () => {
    const plan = tlsPlan(file);
    const byName = (n: string) => plan.certs.find((c) => c.names[0] === n);
    expect(byName('nats')).toMatchObject({ uid: 0, names: expect.arrayContaining(['nats', '127.0.0.1']) });
    expect(byName('cassandra')).toMatchObject({ uid: 999, names: expect.arrayContaining(['cassandra', '127.0.0.1']) });
    expect(byName('election-agent-1')).toMatchObject({ uid: 1000, names: ['election-agent-1', 'election-agent-2'] });
    const volumes = [plan.caVolume, ...plan.certs.map((c) => c.volume)];
    expect(new Set(volumes).size).toBe(volumes.length);
    // Only the server that uses a key mounts its volume.
    for (const c of plan.certs) {
      const users = Object.entries(file.services).filter(([n, s]) => n !== TLS_SERVICE && (s.volumes ?? []).some((v) => typeof v === 'string' && v.split(':')[0] === c.volume));
      expect({ cert: c.names[0], users: users.map(([n]) => n).every((n) => n.startsWith(c.names[0]!.replace(/-\d+$/, ''))) }).toEqual({ cert: c.names[0], users: true });
    }
  });

  it(`${CASSANDRA_TLS_ENTRYPOINT} turns encryption on, not optional, from PEM files`, () => {
    expect(checkCassandraTlsEntrypoint(readRepoFile(CASSANDRA_TLS_ENTRYPOINT))).toEqual([]);
  });
});

describe('the TLS checks catch what they are for', () => {
  const mutate = (change: (f: ComposeFile) => void): string[] => {
    const copy = read();
    change(copy);
    return checkComposeTls(copy, apps);
  };
  const env = (f: ComposeFile, service: string) => f.services[service]!.environment as Record<string, string>;

  it.each([
    ['NATS without --tls', (f: ComposeFile) => ((f.services['nats']!.command as string[]).splice((f.services['nats']!.command as string[]).indexOf('--tls'), 1)), /service nats: no --tls/],
    ['an app without the NATS CA', (f: ComposeFile) => delete env(f, 'defender-2')['NATS_TLS_CA_FILE'], /defender-2: NATS_TLS_CA_FILE is not set/],
    ['a store user without the Cassandra CA', (f: ComposeFile) => delete env(f, 'dashboard')['CASSANDRA_TLS_CA_FILE'], /dashboard: CASSANDRA_TLS_CA_FILE is not set/],
    ['a Cassandra name the certificate lacks', (f: ComposeFile) => (env(f, 'assignment-controller-1')['CASSANDRA_TLS_SERVER_NAME'] = 'db'), /CASSANDRA_TLS_SERVER_NAME=db is not among/],
    ['no Cassandra name (the container address is checked)', (f: ComposeFile) => delete env(f, 'fab-sim')['CASSANDRA_TLS_SERVER_NAME'], /fab-sim: CASSANDRA_TLS_SERVER_NAME is not set/],
    ['a CA file on no mount', (f: ComposeFile) => (f.services['defender-1']!.volumes = []), /defender-1: NATS_TLS_CA_FILE=.* is not the stack's ca.crt/],
    ['a NATS host the certificate lacks', (f: ComposeFile) => (env(f, 'defender-3')['NATS_SERVERS'] = 'nats://nats-0:4222'), /NATS_SERVERS names nats-0/],
    ['an app that starts before the certificates exist', (f: ComposeFile) => delete (f.services['election-agent-2']!.depends_on as Record<string, unknown>)[TLS_SERVICE], /election-agent-2: does not wait for tls/],
    ['Cassandra started by the image entrypoint alone', (f: ComposeFile) => delete (f.services['cassandra'] as ComposeService)['entrypoint'], /cassandra: its entrypoint must be/],
    ['a Cassandra certificate mounted where the image entrypoint chowns', (f: ComposeFile) => {
      env(f, 'cassandra')['CASSANDRA_TLS_DIR'] = '/etc/cassandra/tls';
      f.services['cassandra']!.volumes = (f.services['cassandra']!.volumes as string[]).map((v) => v.replace(':/etc/cassandra-tls:', ':/etc/cassandra/tls:'));
    }, /CASSANDRA_TLS_DIR \/etc\/cassandra\/tls is under \/etc\/cassandra/],
    ['a plaintext Cassandra healthcheck', (f: ComposeFile) => (f.services['cassandra']!.healthcheck!.test = ['CMD-SHELL', 'cqlsh 127.0.0.1 9042']), /healthcheck must use cqlsh --ssl/],
    ['an election agent address its certificate does not name', (f: ComposeFile) => (env(f, 'assignment-controller-2')['ELECTION_AGENT_ADDR'] = 'election-agent:9090'), /ELECTION_AGENT_ADDR names election-agent,/],
  ])('%s', (_name, change, message) => {
    expect(mutate(change as (f: ComposeFile) => void)).toEqual(expect.arrayContaining([expect.stringMatching(message)]));
  });

  it('a Cassandra entrypoint that leaves plaintext on', () => {
    const script = readRepoFile(CASSANDRA_TLS_ENTRYPOINT);
    expect(checkCassandraTlsEntrypoint(script.replace('optional: false', 'optional: true'))).toEqual([expect.stringContaining('optional must be false')]);
    expect(checkCassandraTlsEntrypoint(script.replace('enabled: true', 'enabled: false'))).toEqual([expect.stringContaining('enabled must be true')]);
  });
});

describe(`${CASSANDRA_TLS_ENTRYPOINT} run for real (sh, awk) on a cassandra.yaml shaped like the image's`, () => {
  const IMAGE_YAML = [
    'cluster_name: Test Cluster',
    '# Configure client-to-server encryption.',
    'client_encryption_options:',
    '  # Enable client-to-server encryption',
    '  enabled: false',
    '  keystore: conf/.keystore',
    '  keystore_password: cassandra',
    '  # ssl_context_factory:',
    '  #     class_name: org.apache.cassandra.security.DefaultSslContextFactory',
    '  require_client_auth: false',
    '',
    '# internode_compression controls whether traffic between nodes is compressed.',
    'internode_compression: dc',
    'native_transport_port: 9042',
    '',
  ].join('\n');

  it('replaces the block with TLS required from the PEM files, keeps every other setting, the same on every start, then runs the image entrypoint', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cassandra-tls-entrypoint-'));
    try {
      mkdirSync(join(dir, 'conf'));
      mkdirSync(join(dir, 'tls'));
      mkdirSync(join(dir, 'bin'));
      writeFileSync(join(dir, 'conf', 'cassandra.yaml'), IMAGE_YAML);
      writeFileSync(join(dir, 'tls', 'tls.pem'), 'key and certificate');
      writeFileSync(join(dir, 'tls', 'ca.crt'), 'ca');
      // Stands in for the image's entrypoint: shows what it would be run with.
      writeFileSync(join(dir, 'bin', 'docker-entrypoint.sh'), '#!/bin/sh\necho "image entrypoint: $*"\n', { mode: 0o755 });
      const run = () =>
        execFileSync('sh', [join(REPO, CASSANDRA_TLS_ENTRYPOINT), 'cassandra', '-f'], {
          encoding: 'utf8',
          env: { PATH: `${join(dir, 'bin')}:${process.env['PATH'] ?? ''}`, CASSANDRA_CONF: join(dir, 'conf'), CASSANDRA_TLS_DIR: join(dir, 'tls') },
        });
      expect(run()).toContain('image entrypoint: cassandra -f');
      const once = readFileSync(join(dir, 'conf', 'cassandra.yaml'), 'utf8');
      expect(run()).toContain('image entrypoint: cassandra -f');
      expect(readFileSync(join(dir, 'conf', 'cassandra.yaml'), 'utf8')).toBe(once);
      const yaml = parse(once) as Record<string, unknown>;
      expect(yaml).toEqual({
        cluster_name: 'Test Cluster',
        client_encryption_options: {
          enabled: true,
          optional: false,
          ssl_context_factory: { class_name: 'org.apache.cassandra.security.PEMBasedSslContextFactory' },
          keystore: join(dir, 'tls', 'tls.pem'),
          truststore: join(dir, 'tls', 'ca.crt'),
          require_client_auth: false,
        },
        internode_compression: 'dc',
        native_transport_port: 9042,
      });
      // Without the certificate it stops before Cassandra starts.
      rmSync(join(dir, 'tls', 'tls.pem'));
      expect(() => run()).toThrow(/tls\.pem is missing or unreadable/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ------------------------------------------------------------------ real openssl and nats-server

const natsBin = findNatsServer();
const describeWithNatsServer = (name: string, fn: () => void): void => {
  if (natsBin) return describe(name, fn);
  if (infraRequired()) {
    describe(name, () => it('has nats-server (REQUIRE_INFRA=1)', () => expect(natsBin).not.toBeNull()));
    return;
  }
  // The harness's rule (describeWithInfra): a loud skip on a machine without nats-server; CI sets
  // REQUIRE_INFRA=1 (.ci/run), where the branch above makes a missing server a failure, never a skip.
  process.stderr.write(banner(`SKIPPED "${name}": nats-server not found`));
  describe.skip(name, fn);
};

describeWithNatsServer('docker-compose.yml TLS for real: make-certs.sh and the nats service', () => {
  const plan = tlsPlan(file);
  const tlsService = file.services[TLS_SERVICE]!;
  let dir = '';
  let nats: ChildProcess | undefined;
  let natsLog = '';
  let port = 0;

  /** Where a path of a compose service lies in this test: volumes under `dir` (as the tls service sees them), bind mounts in the repository. */
  const local = (s: ComposeService, path: string): string => {
    const m = mountOf(s, path);
    if (!m) throw new Error(`${path} is on no mount`);
    const rest = path.slice(m.target.length);
    if (m.source.startsWith('.')) return join(REPO, m.source, rest);
    const inTls = (tlsService.volumes ?? []).map((v) => String(v).split(':')).find(([source]) => source === m.source)?.[1];
    return join(dir, inTls ?? `volume-${m.source}`, rest);
  };
  const makeCerts = (caDir: string, specs: readonly string[]) =>
    execFileSync('sh', [join(REPO, MAKE_CERTS), caDir, ...specs], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const uid = process.getuid?.() ?? 0;
  const composeArgs = () => [join(dir, plan.caDir), ...plan.certs.map((c) => `${uid}:${join(dir, c.dir)}:${c.names.join(',')}`)];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'deploy-check-tls-'));
    makeCerts(composeArgs()[0]!, composeArgs().slice(1));
    const s = file.services['nats']!;
    port = await freePort();
    const monitor = await freePort();
    const args = (s.command as string[]).map((a) => {
      const m = /^(--[a-z_]+)=(\/.*)$/.exec(a);
      if (m) return `${m[1]}=${m[1] === '--store_dir' ? join(dir, 'nats-data') : local(s, m[2]!)}`;
      return a.startsWith('--http_port=') ? `--http_port=${monitor}` : a;
    });
    mkdirSync(join(dir, 'nats-data'), { recursive: true });
    nats = spawn(natsBin!, [...args, '-a', '127.0.0.1', '-p', String(port)], { env: { PATH: process.env['PATH'] ?? '', ...Object.fromEntries(envOf(s)) }, stdio: ['ignore', 'pipe', 'pipe'] });
    nats.stdout?.on('data', (d: Buffer) => (natsLog += d.toString()));
    nats.stderr?.on('data', (d: Buffer) => (natsLog += d.toString()));
    await waitFor(
      'the nats service healthy',
      async () => {
        if (nats?.exitCode !== null) throw new Error(`nats-server exited: ${natsLog}`);
        return (await fetch(`http://127.0.0.1:${monitor}/healthz?js-enabled-only=true`).catch(() => undefined))?.ok === true;
      },
      30_000,
      100,
    );
  }, 60_000);

  afterAll(async () => {
    if (nats && nats.exitCode === null) {
      const exited = new Promise((r) => nats!.once('exit', r));
      nats.kill('SIGTERM');
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('make-certs.sh makes a CA and, per server, a certificate for its names, a PKCS#8 key only its owner reads, and the PEM keystore Cassandra reads', () => {
    const ca = new X509Certificate(readFileSync(join(dir, plan.caDir, 'ca.crt')));
    expect(ca.ca).toBe(true);
    for (const c of plan.certs) {
      const d = join(dir, c.dir);
      const cert = new X509Certificate(readFileSync(join(d, 'tls.crt')));
      expect(cert.verify(ca.publicKey)).toBe(true);
      expect(cert.ca).toBe(false);
      const san = (cert.subjectAltName ?? '').split(', ');
      for (const n of c.names) expect({ cert: c.names[0], name: n, present: san.includes(/^[\d.]+$/.test(n) ? `IP Address:${n}` : `DNS:${n}`) }).toEqual({ cert: c.names[0], name: n, present: true });
      const key = readFileSync(join(d, 'tls.key'), 'utf8');
      expect(key.startsWith('-----BEGIN PRIVATE KEY-----')).toBe(true);
      expect(statSync(join(d, 'tls.key')).mode & 0o777).toBe(0o400);
      expect(readFileSync(join(d, 'tls.pem'), 'utf8')).toBe(key + readFileSync(join(d, 'tls.crt'), 'utf8'));
      expect(readFileSync(join(d, 'ca.crt'), 'utf8')).toBe(readFileSync(join(dir, plan.caDir, 'ca.crt'), 'utf8'));
    }
    // A CA key never lands in an output directory.
    const all = [plan.caDir, ...plan.certs.map((c) => c.dir)].flatMap((d) => execFileSync('ls', [join(dir, d)], { encoding: 'utf8' }).split('\n'));
    expect(all.filter((f) => f.startsWith('ca.') && f !== 'ca.crt')).toEqual([]);
  });

  it('make-certs.sh keeps valid certificates on a later run and makes new ones when a name is added', () => {
    const caFile = join(dir, plan.caDir, 'ca.crt');
    const before = readFileSync(caFile, 'utf8');
    expect(makeCerts(composeArgs()[0]!, composeArgs().slice(1))).toContain('keeping the existing CA');
    expect(readFileSync(caFile, 'utf8')).toBe(before);
    const other = join(dir, 'other');
    makeCerts(join(other, 'ca'), [`${uid}:${join(other, 'srv')}:one`]);
    const otherCa = readFileSync(join(other, 'ca', 'ca.crt'), 'utf8');
    expect(makeCerts(join(other, 'ca'), [`${uid}:${join(other, 'srv')}:one,two`])).toContain('a new private CA');
    expect(readFileSync(join(other, 'ca', 'ca.crt'), 'utf8')).not.toBe(otherCa);
    expect(new X509Certificate(readFileSync(join(other, 'srv', 'tls.crt'))).subjectAltName).toBe('DNS:one, DNS:two');
  });

  it('refuses a plaintext client: INFO says TLS is required, and a plaintext CONNECT gets no PONG', async () => {
    const received = await new Promise<string>((resolve, reject) => {
      let data = '';
      const sock = netConnect(port, '127.0.0.1');
      const guard = setTimeout(() => {
        sock.destroy();
        reject(new Error(`the server kept a plaintext client for 30 s; it sent: ${data}`));
      }, 30_000);
      const defender = envOf(file.services['defender-1']!);
      sock.on('data', (d) => {
        data += d.toString('latin1');
        if (data.includes('\r\n') && !data.includes('CONNECT-SENT')) {
          sock.write(`CONNECT ${JSON.stringify({ user: defender.get('NATS_USER'), pass: defender.get('NATS_PASSWORD'), verbose: false, pedantic: false })}\r\nPING\r\n`);
          data += 'CONNECT-SENT';
        }
      });
      sock.on('error', () => undefined);
      sock.on('close', () => {
        clearTimeout(guard);
        resolve(data);
      });
    });
    expect(received).toMatch(/^INFO \{.*"tls_required":true/);
    expect(received).not.toContain('PONG');
  }, 40_000);

  it('lets every compose client in over TLS as its own user, with the CA file it mounts', async () => {
    const clients = Object.entries(file.services).filter(([, s]) => composeServiceApp(s, apps) !== undefined || envOf(s).has('NATS_SERVERS'));
    expect(clients.length).toBeGreaterThanOrEqual(9);
    for (const [name, s] of clients) {
      const env = envOf(s);
      const nc = await connect({ servers: `nats://127.0.0.1:${port}`, user: env.get('NATS_USER'), pass: env.get('NATS_PASSWORD'), tls: { caFile: local(s, env.get('NATS_TLS_CA_FILE')!) }, timeout: 20_000 });
      try {
        await nc.flush();
        expect({ name, tls: nc.info?.tls_required, user: env.get('NATS_USER') }).toEqual({ name, tls: true, user: expect.any(String) });
      } finally {
        await nc.close();
      }
    }
  });

  it('is refused by a client that trusts another CA', async () => {
    const other = join(dir, 'rogue');
    makeCerts(join(other, 'ca'), [`${uid}:${join(other, 'srv')}:nats`]);
    const defender = envOf(file.services['defender-1']!);
    await expect(connect({ servers: `nats://127.0.0.1:${port}`, user: defender.get('NATS_USER'), pass: defender.get('NATS_PASSWORD'), tls: { caFile: join(other, 'ca', 'ca.crt') }, timeout: 20_000 })).rejects.toThrow(/certificate/i);
  });
});
