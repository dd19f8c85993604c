import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * PEM files of a throwaway PKI made at test time: a CA, a server certificate for
 * localhost/127.0.0.1, a client certificate, and a second ("rogue") CA nobody trusts with a client
 * certificate it signed. Valid one day; remove with {@link removeTestPki}.
 */
export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A CA the servers do not use: a client trusting only it must refuse the servers. */
  rogueCaCert: string;
  /** A client certificate signed by the rogue CA: servers requiring client certificates refuse it. */
  rogueClientCert: string;
  rogueClientKey: string;
  /** The server certificate and key as a PKCS#12 keystore (for Java servers such as Cassandra). */
  serverKeystore: string;
  /** Password of {@link serverKeystore} (a test value, not a secret). */
  keystorePassword: string;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`openssl ${args[0]} failed${stderr ? `: ${stderr}` : ''} (is the openssl CLI installed?)`, { cause: err });
  }
}

/**
 * Creates a {@link TestPki} in a fresh temporary directory with the `openssl` CLI (EC P-256 keys).
 * @param opts.serverNames extra DNS names for the server certificate (besides localhost and 127.0.0.1)
 */
export function makeTestPki(opts: { serverNames?: readonly string[] } = {}): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'defender-pki-'));
  const key = (name: string) => openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`], dir);
  const selfSigned = (name: string, cn: string) =>
    openssl(['req', '-x509', '-new', '-key', `${name}.key`, '-sha256', '-days', '1', '-subj', `/CN=${cn}`, '-out', `${name}.crt`], dir);
  const signed = (name: string, ca: string, cn: string, ext: string) => {
    openssl(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`], dir);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(
      ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '1', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`],
      dir,
    );
  };
  for (const n of ['ca', 'rogue-ca', 'server', 'client', 'rogue-client']) key(n);
  selfSigned('ca', 'defender-test-ca');
  selfSigned('rogue-ca', 'rogue-ca');
  const names = ['localhost', ...(opts.serverNames ?? [])].map((n) => `DNS:${n}`).join(',');
  signed('server', 'ca', 'localhost', `subjectAltName=${names},IP:127.0.0.1\nextendedKeyUsage=serverAuth\n`);
  signed('client', 'ca', 'defender-client', 'extendedKeyUsage=clientAuth\n');
  signed('rogue-client', 'rogue-ca', 'rogue-client', 'extendedKeyUsage=clientAuth\n');
  const keystorePassword = 'defender-test-keystore';
  openssl(['pkcs12', '-export', '-in', 'server.crt', '-inkey', 'server.key', '-name', 'server', '-out', 'server.p12', '-passout', `pass:${keystorePassword}`], dir);
  const p = (f: string) => join(dir, f);
  return {
    dir,
    caCert: p('ca.crt'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
    rogueCaCert: p('rogue-ca.crt'),
    rogueClientCert: p('rogue-client.crt'),
    rogueClientKey: p('rogue-client.key'),
    serverKeystore: p('server.p12'),
    keystorePassword,
  };
}

/** Deletes the PKI's directory. */
export function removeTestPki(pki: TestPki): void {
  rmSync(pki.dir, { recursive: true, force: true });
}

/**
 * A client certificate for NATS user `user` signed by `pki`'s CA (`ca` selects the rogue CA
 * instead): subjectAltName `DNS:<user>`, which nats-server with `tls { verify_and_map: true }`
 * takes as the user (libs/nats-kv `natsAuthorizationConfig` with `certificate: true`). Written into
 * the PKI's directory as `user-<user>.crt` / `.key`.
 */
export function makeClientCertificate(pki: TestPki, user: string, ca: 'ca' | 'rogue-ca' = 'ca'): { certFile: string; keyFile: string } {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(user)) throw new RangeError(`client certificate user ${JSON.stringify(user)}: 1-64 of [A-Za-z0-9_-]`);
  const name = `user-${user}${ca === 'ca' ? '' : `-${ca}`}`;
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`], pki.dir);
  openssl(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${user}`, '-out', `${name}.csr`], pki.dir);
  writeFileSync(join(pki.dir, `${name}.ext`), `subjectAltName=DNS:${user}\nextendedKeyUsage=clientAuth\n`);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '1', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`], pki.dir);
  return { certFile: join(pki.dir, `${name}.crt`), keyFile: join(pki.dir, `${name}.key`) };
}

/**
 * nats-server's `tls` block for mutual TLS per role: `pki`'s server certificate, clients verified
 * against its CA, and the user taken from the client certificate (`verify_and_map`; see
 * {@link makeClientCertificate}). Put before an `authorization` block in a `-c` file.
 */
export function natsVerifyAndMapTls(pki: TestPki): string {
  return `tls {\n  cert_file: ${JSON.stringify(pki.serverCert)}\n  key_file: ${JSON.stringify(pki.serverKey)}\n  ca_file: ${JSON.stringify(pki.caCert)}\n  verify_and_map: true\n}\n`;
}
