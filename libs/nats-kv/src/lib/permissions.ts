import { DEFAULT_BUCKETS } from './buckets';
import { natsInboxPrefix, natsInboxPrefixFor, natsUserOfCertificate } from './inbox';
import { STREAMS } from './streams';

export { natsInboxPrefix, natsInboxPrefixFor, natsUserOfCertificate };

/**
 * Who connects to NATS, each with its own identity (SECURITY.md):
 * - `defender`: its claims and heartbeats, dead letters, alarms and holds; provisions the streams.
 * - `controller`: the assignment map.
 * - `election-agent`: the election bucket.
 * - `dashboard`: reads only.
 * - `publisher`: the fab's equipment (or fab-sim): run notifications, nothing else to write.
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

/** What one app role does with each JetStream stream (a KV bucket is the stream `KV_<bucket>`). */
export interface RoleGrant {
  /**
   * Streams it provisions: creates when missing, at start and after NATS lost its store (issue 22's
   * recovery, ADR 0007). `STREAM.CREATE.<name>` cannot change a stream that exists (nats-server
   * refuses a create whose configuration differs), so this right cannot wipe or reshape one.
   */
  readonly provisions: readonly string[];
  /** Streams whose settings it updates (`STREAM.UPDATE.<name>`: the writer's value limits and ages). */
  readonly updates: readonly string[];
  /** Subjects it publishes (its stream and bucket writes). */
  readonly writes: readonly string[];
  /** Streams it reads: stream info, message gets (leader and direct). */
  readonly reads: readonly string[];
  /** Streams it reads with ordered (ephemeral) consumers: KV watches, the notification and alarm feeds. */
  readonly consumes: readonly string[];
}

/** The stream names of the streams and buckets for `names`. */
export function streamNames(names: PermissionNames = DEFAULT_PERMISSION_NAMES) {
  return {
    notifications: STREAMS.notifications,
    deadLetters: STREAMS.deadLetters,
    defenseEvents: STREAMS.defenseEvents,
    stableIds: `KV_${names.stableIds}`,
    heartbeats: `KV_${names.heartbeats}`,
    assignments: `KV_${names.assignments}`,
    elections: `KV_${names.elections}`,
  } as const;
}

/**
 * What each app role owns and needs (SECURITY.md, "NATS permissions"). Nobody deletes or purges a
 * stream, deletes a message, creates a durable consumer, lists consumers or administers the server.
 * - defender: writes claims, heartbeats, dead letters, alarms and holds; provisions the three
 *   streams and its two buckets and the assignment bucket it needs (it re-creates all after a
 *   store loss); reads the notifications (ordered consumer), its buckets and the map (watch).
 * - controller: writes the map; provisions the three cluster buckets (its recovery re-creates
 *   them); watches the map; reads claims and heartbeats.
 * - election-agent: writes, provisions and watches the election bucket; nothing else.
 * - dashboard: reads; watches the map and follows the alarms; provisions nothing.
 * - publisher (the fab's equipment, fab-sim): publishes run notifications; reads the notification
 *   stream's info and follows the alarm stream (fab-sim's report); provisions nothing.
 */
export function roleGrants(names: PermissionNames = DEFAULT_PERMISSION_NAMES): Record<AppRole, RoleGrant> {
  const s = streamNames(names);
  const cluster = [s.stableIds, s.heartbeats, s.assignments];
  return {
    defender: {
      provisions: [s.notifications, s.deadLetters, s.defenseEvents, ...cluster],
      updates: [s.notifications, s.deadLetters, s.defenseEvents, s.stableIds, s.heartbeats],
      writes: [`$KV.${names.stableIds}.>`, `$KV.${names.heartbeats}.>`, 'dc.dead.*', 'defense.alarms.>', 'defense.holds.>'],
      reads: [s.notifications, s.deadLetters, s.defenseEvents, ...cluster],
      consumes: [s.notifications, s.assignments],
    },
    controller: {
      provisions: cluster,
      updates: [s.assignments],
      writes: [`$KV.${names.assignments}.>`],
      reads: cluster,
      consumes: [s.assignments],
    },
    'election-agent': {
      provisions: [s.elections],
      updates: [s.elections],
      writes: [`$KV.${names.elections}.>`],
      reads: [s.elections],
      consumes: [s.elections],
    },
    dashboard: {
      provisions: [],
      updates: [],
      writes: [],
      reads: Object.values(s),
      consumes: [s.assignments, s.defenseEvents],
    },
    publisher: {
      provisions: [],
      updates: [],
      writes: ['dc.*.*.completed', 'dc.*.*.event'],
      reads: [s.notifications, s.defenseEvents],
      consumes: [s.defenseEvents],
    },
  };
}

type AppRole = Exclude<NatsRole, 'defender-controller'>;

/** The publish permissions of one grant (see {@link RoleGrant}). */
function grantSubjects(g: RoleGrant): string[] {
  const api = '$JS.API';
  return [
    ...g.provisions.map((x) => `${api}.STREAM.CREATE.${x}`),
    ...g.updates.map((x) => `${api}.STREAM.UPDATE.${x}`),
    ...g.reads.flatMap((x) => [`${api}.STREAM.INFO.${x}`, `${api}.STREAM.MSG.GET.${x}`, `${api}.DIRECT.GET.${x}`, `${api}.DIRECT.GET.${x}.>`]),
    // An ordered consumer is named by the client (random), filtered by subject (extra tokens):
    // created, read (info, next batch), answered (flow control) and deleted on reset.
    ...g.consumes.flatMap((x) => [`${api}.CONSUMER.CREATE.${x}.>`, `${api}.CONSUMER.INFO.${x}.*`, `${api}.CONSUMER.MSG.NEXT.${x}.*`, `${api}.CONSUMER.DELETE.${x}.*`, `$JS.FC.${x}.>`]),
    ...g.writes,
  ];
}

/**
 * The subjects `role` may publish to and subscribe to, as user `user` (its inbox, see
 * {@link natsInboxPrefix}; default: the role's name, as every deployment names its users).
 */
export function natsPermissions(role: NatsRole, names: PermissionNames = DEFAULT_PERMISSION_NAMES, user: string = role): NatsPermissions {
  const grants = roleGrants(names);
  const publish = ['$JS.API.INFO', ...roleParts(role).flatMap((r) => grantSubjects(grants[r as AppRole]))];
  return { publish: { allow: [...new Set(publish)] }, subscribe: { allow: [`${natsInboxPrefix(user)}.>`] } };
}

/**
 * One NATS user: a name, its role, and its password — literally, or as the name of an environment
 * variable nats-server reads when it loads the file (`password: $NAME`; it refuses to start when the
 * variable is unset), so a committed configuration holds no secret — or no password but a client
 * certificate (`certificate: true`): with `tls { verify_and_map: true }` nats-server takes the user
 * from the certificate it verified (a DNS name `DNS:<user>` in its subjectAltName; SECURITY.md
 * "Mutual TLS per role").
 */
export type NatsUser = { readonly user: string; readonly role: NatsRole } & ({ readonly password: string } | { readonly passwordEnv: string } | { readonly certificate: true });

const SAFE = /^[A-Za-z0-9._-]{1,128}$/;
/** No `.` in a user: its inbox prefix (natsInboxPrefix) must be one subject token. */
const USER = /^[A-Za-z0-9_-]{1,128}$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,127}$/;

/**
 * The `authorization` block of a nats-server configuration giving each user its role's
 * permissions. Users are restricted to `[A-Za-z0-9_-]`, passwords to `[A-Za-z0-9._-]` (nothing to quote), password
 * variables to `[A-Z_][A-Z0-9_]*`.
 * @throws RangeError naming every bad user, password or duplicate.
 */
export function natsAuthorizationConfig(users: readonly NatsUser[], names: PermissionNames = DEFAULT_PERMISSION_NAMES): string {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const u of users) {
    if (!USER.test(u.user)) problems.push(`user ${JSON.stringify(u.user)}: 1-128 of [A-Za-z0-9_-]`);
    if ('password' in u && (!SAFE.test(u.password) || u.password.length < 12)) problems.push(`password of ${u.user}: 12-128 of [A-Za-z0-9._-]`);
    if ('passwordEnv' in u && !ENV_NAME.test(u.passwordEnv)) problems.push(`password variable of ${u.user}: [A-Z_][A-Z0-9_]*`);
    if (!(NATS_ROLES as readonly string[]).includes(u.role)) problems.push(`role of ${u.user}: one of ${NATS_ROLES.join(', ')}`);
    if (seen.has(u.user)) problems.push(`user ${u.user} listed twice`);
    seen.add(u.user);
  }
  if (problems.length > 0) throw new RangeError(`NATS users: ${problems.join('; ')}`);
  const list = (xs: readonly string[]) => `[${xs.map((x) => JSON.stringify(x)).join(', ')}]`;
  const entries = users.map((u) => {
    const p = natsPermissions(u.role, names, u.user);
    return [
      `    {`,
      `      user: ${JSON.stringify(u.user)}`,
      ...('certificate' in u ? [`      # identified by its client certificate (DNS:${u.user})`] : [`      password: ${'password' in u ? JSON.stringify(u.password) : `$${u.passwordEnv}`}`]),
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
