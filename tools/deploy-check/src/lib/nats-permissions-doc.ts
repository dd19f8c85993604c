import { parseNatsAuthorization, type ParsedNatsUser } from '@defender/infra-harness';

/** The documents that carry the generated permission table (SECURITY.md, k8s/README.md). */
export const NATS_PERMISSION_DOCS = ['SECURITY.md', 'k8s/README.md'] as const;

export const DOC_BEGIN = '<!-- BEGIN nats-permissions: generated from deploy/nats/auth.conf by `npm run nats-auth-conf`; do not edit -->';
export const DOC_END = '<!-- END nats-permissions -->';

/** The streams (or buckets) a user's allow list names after `prefix` (`$JS.API.STREAM.CREATE.` ...). */
function streamsAfter(u: ParsedNatsUser, prefix: string, suffix = ''): string[] {
  return u.publish.filter((s) => s.startsWith(prefix) && s.endsWith(suffix)).map((s) => s.slice(prefix.length, s.length - suffix.length));
}

const named = (xs: readonly string[]) => (xs.length === 0 ? '—' : xs.map((x) => `\`${x.replace(/^KV_/, 'KV ')}\``).join(', '));

/**
 * The permission table of every user in `authorization` (deploy/nats/auth.conf), read from the
 * allow lists nats-server applies: what each user may create, update, publish, read and follow,
 * and the inbox it may subscribe to. Everything not listed is refused (deletions and purges of
 * streams and messages, durable consumers, consumer and stream listings, server administration).
 */
export function natsPermissionTable(authorization: string): string {
  const rows = parseNatsAuthorization(authorization).map((u) => {
    const api = '$JS.API.';
    const writes = u.publish.filter((s) => !s.startsWith(api) && !s.startsWith('$JS.FC.'));
    const cells = [
      `\`${u.user}\``,
      named(streamsAfter(u, `${api}STREAM.CREATE.`)),
      named(streamsAfter(u, `${api}STREAM.UPDATE.`)),
      writes.length === 0 ? '—' : writes.map((w) => `\`${w}\``).join(', '),
      named(streamsAfter(u, `${api}STREAM.INFO.`)),
      named(streamsAfter(u, `${api}CONSUMER.CREATE.`, '.>')),
      u.subscribe.map((s) => `\`${s}\``).join(', '),
    ];
    return `| ${cells.join(' | ')} |`;
  });
  return [
    DOC_BEGIN,
    '',
    '| NATS user | creates when missing (provisions) | updates the settings of | publishes to | reads (info, message gets) | follows (ordered consumers) | subscribes to |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    'Every user may also ask `$JS.API.INFO`. Nobody may delete or purge a stream or a message, create a durable consumer, list',
    'streams or consumers, or administer the server; a create of an existing stream with other settings is refused by',
    'nats-server, so provisioning cannot reshape or empty a stream. `KV x` is bucket `x` (stream `KV_x`).',
    '',
    DOC_END,
  ].join('\n');
}

/**
 * `doc` with its generated block replaced by `table` (the block must be there once).
 * @throws Error when the markers are missing, repeated or out of order.
 */
export function withPermissionTable(doc: string, table: string, name: string): string {
  const begin = doc.indexOf(DOC_BEGIN);
  const end = doc.indexOf(DOC_END);
  if (begin < 0 || end < begin || doc.indexOf(DOC_BEGIN, begin + 1) >= 0) throw new Error(`${name}: expected one generated NATS permission block (${DOC_BEGIN} ... ${DOC_END})`);
  return doc.slice(0, begin) + table + doc.slice(end + DOC_END.length);
}
