import { DEFAULT_BUCKETS } from './buckets';
import { STREAMS } from './streams';

/**
 * Who connects to NATS, each with its own identity (SECURITY.md):
 * - `defender`: its claims and heartbeats, dead letters, alarms and holds; creates and updates the streams.
 * - `controller`: the assignment map.
 * - `election-agent`: the election bucket.
 * - `dashboard`: reads only.
 * - `publisher`: the fab's equipment (or fab-sim): run notifications; creates and updates the streams.
 * - `defender-controller`: a defender that also hosts the controller (`ASSIGNMENT_CONTROLLER_ENABLED`,
 *   the seeds' embedded mode): both roles' writes, nothing more.
 */
export const NATS_ROLES = ['defender', 'controller', 'election-agent', 'dashboard', 'publisher', 'defender-controller'] as const;
export type NatsRole = (typeof NATS_ROLES)[number];

/** The app roles whose writes `role` has: itself, or both for the embedded controller's defender. */
export function roleParts(role: NatsRole): readonly NatsRole[] {
  return role === 'defender-controller' ? ['defender', 'controller'] : [role];
}

/** Names the permissions are written for (the apps' NATS_KV_* / ELECTION_KV_BUCKET settings). */
export interface PermissionNames {
  readonly stableIds: string;
  readonly heartbeats: string;
  readonly assignments: string;
  readonly elections: string;
}

export const DEFAULT_PERMISSION_NAMES: PermissionNames = { ...DEFAULT_BUCKETS, elections: 'elections' };

/** nats-server `permissions` of one user: subjects it may publish to and subscribe to. */
export interface NatsPermissions {
  readonly publish: { readonly allow: readonly string[] };
  readonly subscribe: { readonly allow: readonly string[] };
}

/**
 * What every identity needs to read: JetStream and stream information, bucket and stream reads
 * (direct and API gets), consumers (KV watches, notification readers) with their acks and flow
 * control, and stream creation (idempotent for an existing stream with the same configuration; a
 * stream NATS lost is created again by whoever needs it, ADR 0007). Not here, so refused to all:
 * `$JS.API.STREAM.UPDATE` except to the streams' and buckets' owners, `STREAM.DELETE`, `STREAM.PURGE`,
 * `STREAM.MSG.DELETE`, and every write to a bucket's `$KV.<bucket>.>` subjects but the owner's.
 */
const READER_PUBLISH = [
  '$JS.API.INFO',
  '$JS.API.STREAM.INFO.>',
  '$JS.API.STREAM.NAMES',
  '$JS.API.STREAM.LIST',
  '$JS.API.STREAM.CREATE.>',
  '$JS.API.STREAM.MSG.GET.>',
  '$JS.API.DIRECT.GET.>',
  '$JS.API.CONSUMER.>',
  '$JS.ACK.>',
  '$JS.FC.>',
];

/** A bucket's writes, and updating its stream's settings (its value limit, buckets.ts `applyLimit`). */
const kvWrites = (bucket: string) => [`$KV.${bucket}.>`, `$JS.API.STREAM.UPDATE.KV_${bucket}`];
const streamUpdates = () => Object.values(STREAMS).map((s) => `$JS.API.STREAM.UPDATE.${s}`);

/** The subjects `role` may publish to and subscribe to (least privilege for writes; reads are open). */
export function natsPermissions(role: NatsRole, names: PermissionNames = DEFAULT_PERMISSION_NAMES): NatsPermissions {
  const own: Record<Exclude<NatsRole, 'defender-controller'>, string[]> = {
    defender: [...kvWrites(names.stableIds), ...kvWrites(names.heartbeats), 'dc.dead.*', 'defense.alarms.>', 'defense.holds.>', ...streamUpdates()],
    controller: kvWrites(names.assignments),
    'election-agent': kvWrites(names.elections),
    dashboard: [],
    publisher: ['dc.*.*.completed', ...streamUpdates()],
  };
  const writes = roleParts(role).flatMap((r) => own[r as keyof typeof own]);
  return { publish: { allow: [...READER_PUBLISH, ...new Set(writes)] }, subscribe: { allow: ['>'] } };
}

/**
 * One NATS user: a name, its role, and its password — literally, or as the name of an environment
 * variable nats-server reads when it loads the file (`password: $NAME`; it refuses to start when the
 * variable is unset), so a committed configuration holds no secret.
 */
export type NatsUser = { readonly user: string; readonly role: NatsRole } & ({ readonly password: string } | { readonly passwordEnv: string });

const SAFE = /^[A-Za-z0-9._-]{1,128}$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,127}$/;

/**
 * The `authorization` block of a nats-server configuration giving each user its role's
 * permissions. Users and passwords are restricted to `[A-Za-z0-9._-]` (nothing to quote), password
 * variables to `[A-Z_][A-Z0-9_]*`.
 * @throws RangeError naming every bad user, password or duplicate.
 */
export function natsAuthorizationConfig(users: readonly NatsUser[], names: PermissionNames = DEFAULT_PERMISSION_NAMES): string {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const u of users) {
    if (!SAFE.test(u.user)) problems.push(`user ${JSON.stringify(u.user)}: 1-128 of [A-Za-z0-9._-]`);
    if ('password' in u && (!SAFE.test(u.password) || u.password.length < 12)) problems.push(`password of ${u.user}: 12-128 of [A-Za-z0-9._-]`);
    if ('passwordEnv' in u && !ENV_NAME.test(u.passwordEnv)) problems.push(`password variable of ${u.user}: [A-Z_][A-Z0-9_]*`);
    if (!(NATS_ROLES as readonly string[]).includes(u.role)) problems.push(`role of ${u.user}: one of ${NATS_ROLES.join(', ')}`);
    if (seen.has(u.user)) problems.push(`user ${u.user} listed twice`);
    seen.add(u.user);
  }
  if (problems.length > 0) throw new RangeError(`NATS users: ${problems.join('; ')}`);
  const list = (xs: readonly string[]) => `[${xs.map((x) => JSON.stringify(x)).join(', ')}]`;
  const entries = users.map((u) => {
    const p = natsPermissions(u.role, names);
    return [
      `    {`,
      `      user: ${JSON.stringify(u.user)}`,
      `      password: ${'password' in u ? JSON.stringify(u.password) : `$${u.passwordEnv}`}`,
      `      # role: ${u.role}`,
      `      permissions: {`,
      `        publish: { allow: ${list(p.publish.allow)} }`,
      `        subscribe: { allow: ${list(p.subscribe.allow)} }`,
      `      }`,
      `    }`,
    ].join('\n');
  });
  return ['authorization {', '  users: [', entries.join('\n'), '  ]', '}', ''].join('\n');
}
