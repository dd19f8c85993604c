/**
 * Writes deploy/nats/auth.conf (the per-role NATS users of compose and the k8s docs) from
 * libs/nats-kv permissions.ts.
 *
 *   npm run nats-auth-conf             write the file
 *   npm run nats-auth-conf -- --check  exit 1 when it is missing or out of date (writes nothing)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { natsAuthConf, NATS_AUTH_CONF } from './lib/nats-auth';
import { REPO } from './lib/repo';

function main(argv: string[]): number {
  const check = argv.includes('--check');
  const unknown = argv.filter((a) => a !== '--check');
  if (unknown.length > 0) {
    process.stderr.write(`nats-auth-conf: unknown argument ${unknown.join(' ')}\nUsage: npm run nats-auth-conf [-- --check]\n`);
    return 2;
  }
  const file = join(REPO, NATS_AUTH_CONF);
  const content = natsAuthConf();
  const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  if (current === content) return 0;
  if (check) {
    process.stderr.write(`nats-auth-conf: ${NATS_AUTH_CONF} is ${current === undefined ? 'missing' : 'out of date'} (npm run nats-auth-conf)\n`);
    return 1;
  }
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, content);
  process.stdout.write(`nats-auth-conf: wrote ${NATS_AUTH_CONF}\n`);
  return 0;
}

if (require.main === module) process.exit(main(process.argv.slice(2)));
