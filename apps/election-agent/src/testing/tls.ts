import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** PEM files of a throwaway PKI: a CA, a server certificate for localhost/127.0.0.1, a client certificate. */
export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A second CA (and a client certificate it signed) that the server does not trust. */
  rogueClientCert: string;
  rogueClientKey: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Creates the PKI with the `openssl` CLI (EC P-256 keys, valid one day). */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'election-pki-'));
  const key = (name: string) =>
    openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`], dir);
  const selfSigned = (name: string, cn: string) =>
    openssl(
      [
        'req',
        '-x509',
        '-new',
        '-key',
        `${name}.key`,
        '-sha256',
        '-days',
        '1',
        '-subj',
        `/CN=${cn}`,
        '-out',
        `${name}.crt`,
      ],
      dir,
    );
  const signed = (name: string, ca: string, cn: string, ext: string) => {
    openssl(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`], dir);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        `${ca}.crt`,
        '-CAkey',
        `${ca}.key`,
        '-CAcreateserial',
        '-days',
        '1',
        '-sha256',
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.crt`,
      ],
      dir,
    );
  };
  for (const n of ['ca', 'rogue-ca', 'server', 'client', 'rogue-client']) key(n);
  selfSigned('ca', 'defender-test-ca');
  selfSigned('rogue-ca', 'rogue-ca');
  signed(
    'server',
    'ca',
    'localhost',
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n',
  );
  signed('client', 'ca', 'defender-client', 'extendedKeyUsage=clientAuth\n');
  signed('rogue-client', 'rogue-ca', 'rogue-client', 'extendedKeyUsage=clientAuth\n');
  const p = (f: string) => join(dir, f);
  return {
    dir,
    caCert: p('ca.crt'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
    rogueClientCert: p('rogue-client.crt'),
    rogueClientKey: p('rogue-client.key'),
  };
}
