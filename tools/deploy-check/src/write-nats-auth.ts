/**
 * Writes deploy/nats/auth.conf (the per-role NATS users of compose and the k8s docs) from
 * libs/nats-kv permissions.ts, and the permission table in SECURITY.md and k8s/README.md from that
 * file.
 *
 *   npm run nats-auth-conf                    write them
 *   npm run nats-auth-conf -- --check         exit 1 when one is missing or out of date (writes nothing)
 *   npm run nats-auth-conf -- --certificates  print the users identified by client certificates instead
 *                                             of passwords (mutual TLS per role; writes nothing)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { natsAuthConf, natsAuthConfCertificates, NATS_AUTH_CONF } from './lib/nats-auth';
import { NATS_PERMISSION_DOCS, natsPermissionTable, withPermissionTable } from './lib/nats-permissions-doc';
import { REPO } from './lib/repo';

function main(argv: string[]): number {
  const check = argv.includes('--check');
  const unknown = argv.filter((a) => a !== '--check' && a !== '--certificates');
  if (unknown.length > 0 || argv.length > 1) {
    process.stderr.write(`nats-auth-conf: ${unknown.length > 0 ? `unknown argument ${unknown.join(' ')}` : 'one option at most'}\nUsage: npm run nats-auth-conf [-- --check | --certificates]\n`);
    return 2;
  }
  if (argv.includes('--certificates')) {
    process.stdout.write(natsAuthConfCertificates());
    return 0;
  }
  const conf = natsAuthConf();
  const table = natsPermissionTable(conf);
  const wanted: [string, string | undefined][] = [[NATS_AUTH_CONF, conf]];
  for (const doc of NATS_PERMISSION_DOCS) {
    const file = join(REPO, doc);
    wanted.push([doc, existsSync(file) ? withPermissionTable(readFileSync(file, 'utf8'), table, doc) : undefined]);
  }
  let stale = 0;
  for (const [rel, content] of wanted) {
    const file = join(REPO, rel);
    const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    if (content === undefined) {
      process.stderr.write(`nats-auth-conf: ${rel} is missing\n`);
      stale++;
      continue;
    }
    if (current === content) continue;
    if (check) {
      process.stderr.write(`nats-auth-conf: ${rel} is ${current === undefined ? 'missing' : 'out of date'} (npm run nats-auth-conf)\n`);
      stale++;
      continue;
    }
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
    process.stdout.write(`nats-auth-conf: wrote ${rel}\n`);
  }
  return stale > 0 ? 1 : 0;
}

if (require.main === module) process.exit(main(process.argv.slice(2)));
