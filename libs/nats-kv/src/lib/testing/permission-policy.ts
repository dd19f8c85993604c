/**
 * The least-privilege policy of issue 50 as the permission-matrix test states it, written here
 * independently of permissions.ts (which implements it): who writes, provisions, updates, reads and
 * follows each stream and bucket. `permissions.int.spec.ts` checks deploy/nats/auth.conf grants
 * exactly what this table justifies and that a real nats-server enforces it.
 */
export const APP_ROLES = ['defender', 'controller', 'election-agent', 'dashboard', 'publisher'] as const;
export type AppRole = (typeof APP_ROLES)[number];

export interface StreamPolicy {
  /** The JetStream stream (a bucket's is `KV_<bucket>`). */
  readonly stream: string;
  /** Subjects its writers publish: the permission pattern and a sample subject it covers. */
  readonly subjects: readonly { readonly pattern: string; readonly sample: string }[];
  /** Who publishes to it (writes the bucket). */
  readonly writers: readonly AppRole[];
  /** Who creates it when missing: at start, and after NATS lost its store (issue 22, ADR 0007). */
  readonly provisioners: readonly AppRole[];
  /** Who changes its settings (the writer's limits). */
  readonly updaters: readonly AppRole[];
  /** Who reads it: stream info, message gets. */
  readonly readers: readonly AppRole[];
  /** Who follows it with ordered consumers (KV watches, the notification and alarm feeds). */
  readonly consumers: readonly AppRole[];
}

const bucket = (name: string, p: Omit<StreamPolicy, 'stream' | 'subjects'>): StreamPolicy => ({
  stream: `KV_${name}`,
  subjects: [{ pattern: `$KV.${name}.>`, sample: `$KV.${name}.probe` }],
  ...p,
});

/**
 * One row per stream and bucket. Why each role is where it is:
 * - defenders process the notifications (ordered consumer and message gets), write dead letters,
 *   alarms and holds (and read the last alarm id), claims and heartbeats, watch the map, and
 *   re-create every stream and the three cluster buckets after a store loss (processing.service,
 *   membership.service); they update the settings of what they write (and of the notification
 *   stream, whose settings they own: the equipment may not change it).
 * - controllers write and watch the map, read claims and heartbeats, and re-create the three
 *   cluster buckets after a store loss (LeadershipOrchestrator).
 * - election agents own the election bucket alone.
 * - the dashboard (and defenderctl, which connects as it) reads everything, watches the map and
 *   follows the alarms; it creates and changes nothing.
 * - the equipment (publisher) publishes runs and equipment events; fab-sim, which runs as it, waits for the notification
 *   stream and follows the alarm stream for its report.
 */
export const POLICY: Readonly<Record<string, StreamPolicy>> = {
  notifications: {
    stream: 'dc-notifications',
    subjects: [
      { pattern: 'dc.*.*.completed', sample: 'dc.tool1.ch1.completed' },
      // Equipment events (ADR 0019): the equipment side (publisher) alone.
      { pattern: 'dc.*.*.event', sample: 'dc.tool1.ch1.event' },
    ],
    writers: ['publisher'],
    provisioners: ['defender'],
    updaters: ['defender'],
    readers: ['defender', 'dashboard', 'publisher'],
    consumers: ['defender'],
  },
  deadLetters: {
    stream: 'dc-dead-letters',
    subjects: [{ pattern: 'dc.dead.*', sample: 'dc.dead.bad-payload' }],
    writers: ['defender'],
    provisioners: ['defender'],
    updaters: ['defender'],
    readers: ['defender', 'dashboard'],
    consumers: [],
  },
  defenseEvents: {
    stream: 'defense-events',
    subjects: [
      { pattern: 'defense.alarms.>', sample: 'defense.alarms.tool1.ch1' },
      { pattern: 'defense.holds.>', sample: 'defense.holds.tool1.ch1' },
    ],
    writers: ['defender'],
    provisioners: ['defender'],
    updaters: ['defender'],
    readers: ['defender', 'dashboard', 'publisher'],
    consumers: ['dashboard', 'publisher'],
  },
  stableIds: bucket('stable-ids', {
    writers: ['defender'],
    provisioners: ['defender', 'controller'],
    updaters: ['defender'],
    readers: ['defender', 'controller', 'dashboard'],
    consumers: [],
  }),
  heartbeats: bucket('defender-heartbeats', {
    writers: ['defender'],
    provisioners: ['defender', 'controller'],
    updaters: ['defender'],
    readers: ['defender', 'controller', 'dashboard'],
    consumers: [],
  }),
  assignments: bucket('defender-assignments', {
    writers: ['controller'],
    provisioners: ['defender', 'controller'],
    updaters: ['controller'],
    readers: ['defender', 'controller', 'dashboard'],
    consumers: ['defender', 'controller', 'dashboard'],
  }),
  elections: bucket('elections', {
    writers: ['election-agent'],
    provisioners: ['election-agent'],
    updaters: ['election-agent'],
    readers: ['election-agent', 'dashboard'],
    consumers: ['election-agent'],
  }),
};

/** The app roles of a NATS role (a defender hosting the controller has both). */
export const partsOf = (role: string): AppRole[] => (role === 'defender-controller' ? ['defender', 'controller'] : [role as AppRole]);

/**
 * Every subject the policy justifies `role` publishing to, with the reason: the JetStream API
 * requests of its rights on each stream (an ordered consumer is named by the client, hence one
 * wildcard token for its name, and filtered by subject, hence `>` after it) and its writes.
 */
export function justifiedPublish(role: string): Map<string, string> {
  const out = new Map<string, string>([['$JS.API.INFO', 'account info: every JetStream client asks it first']]);
  const parts = partsOf(role);
  const has = (who: readonly AppRole[]) => parts.some((p) => who.includes(p));
  for (const [key, p] of Object.entries(POLICY)) {
    const s = p.stream;
    if (has(p.provisioners)) out.set(`$JS.API.STREAM.CREATE.${s}`, `provisions ${key}`);
    if (has(p.updaters)) out.set(`$JS.API.STREAM.UPDATE.${s}`, `updates ${key}`);
    if (has(p.readers)) {
      for (const sub of [`STREAM.INFO.${s}`, `STREAM.MSG.GET.${s}`, `DIRECT.GET.${s}`]) out.set(`$JS.API.${sub}`, `reads ${key}`);
      out.set(`$JS.API.DIRECT.GET.${s}.>`, `reads ${key} by subject (direct get of a key)`);
    }
    if (has(p.consumers)) {
      out.set(`$JS.API.CONSUMER.CREATE.${s}.>`, `follows ${key}: ordered consumer, name chosen by the client, filter subject`);
      for (const op of ['INFO', 'MSG.NEXT', 'DELETE']) out.set(`$JS.API.CONSUMER.${op}.${s}.*`, `follows ${key}: its ordered consumer by name`);
      out.set(`$JS.FC.${s}.>`, `follows ${key}: flow-control replies of a push consumer (KV watch)`);
    }
    if (has(p.writers)) for (const { pattern } of p.subjects) out.set(pattern, `writes ${key}`);
  }
  return out;
}
