import { natsAuthorizationConfig, natsInboxPrefix, natsPermissions, NATS_ROLES, roleParts } from './permissions';

describe('natsPermissions', () => {
  it('lets each bucket and stream subject be written by one app role only (and the embedded controller\'s defender)', () => {
    const writers = (subject: string) => NATS_ROLES.filter((r) => natsPermissions(r).publish.allow.includes(subject));
    expect(writers('$KV.defender-assignments.>')).toEqual(['controller', 'defender-controller']);
    expect(writers('$KV.elections.>')).toEqual(['election-agent']);
    expect(writers('$KV.stable-ids.>')).toEqual(['defender', 'defender-controller']);
    expect(writers('$KV.defender-heartbeats.>')).toEqual(['defender', 'defender-controller']);
    expect(writers('dc.*.*.completed')).toEqual(['publisher']);
    expect(writers('dc.*.*.event')).toEqual(['publisher']);
    expect(writers('defense.alarms.>')).toEqual(['defender', 'defender-controller']);
  });

  it('gives the embedded controller\'s defender exactly the rights of a defender and a controller', () => {
    const pub = (r: (typeof NATS_ROLES)[number]) => natsPermissions(r).publish.allow;
    expect(new Set(pub('defender-controller'))).toEqual(new Set([...pub('defender'), ...pub('controller')]));
    expect(roleParts('defender-controller')).toEqual(['defender', 'controller']);
    expect(roleParts('dashboard')).toEqual(['dashboard']);
  });

  it('names every stream it grants: no wildcard over streams, no deletion, purge, durable consumer or listing; subscriptions to the user\'s own inbox only', () => {
    for (const role of NATS_ROLES) {
      const p = natsPermissions(role);
      expect(p.publish.allow).not.toContain('>');
      expect(p.publish.allow.filter((s) => /STREAM\.(DELETE|PURGE|MSG\.DELETE)|DURABLE|CONSUMER\.(LIST|NAMES)|STREAM\.(NAMES|LIST)|^\$KV\.>$|^\$JS\.API\.>$|^\$JS\.API\.[A-Z.]*\.>$/.test(s))).toEqual([]);
      expect(p.subscribe.allow).toEqual([`_INBOX_${role}.>`]);
    }
  });

  it('lets only defenders and controllers provision the cluster buckets, only defenders the streams; the dashboard and the equipment provision and update nothing', () => {
    const creators = (stream: string) => NATS_ROLES.filter((r) => natsPermissions(r).publish.allow.includes(`$JS.API.STREAM.CREATE.${stream}`));
    const updaters = (stream: string) => NATS_ROLES.filter((r) => natsPermissions(r).publish.allow.includes(`$JS.API.STREAM.UPDATE.${stream}`));
    expect(creators('dc-notifications')).toEqual(['defender', 'defender-controller']);
    expect(creators('KV_defender-assignments')).toEqual(['defender', 'controller', 'defender-controller']);
    expect(creators('KV_elections')).toEqual(['election-agent']);
    expect(updaters('defense-events')).toEqual(['defender', 'defender-controller']);
    expect(updaters('KV_defender-assignments')).toEqual(['controller', 'defender-controller']);
    for (const role of ['dashboard', 'publisher'] as const) expect(natsPermissions(role).publish.allow.filter((s) => /STREAM\.(CREATE|UPDATE)/.test(s))).toEqual([]);
  });

  it('writes the inbox of the user a role is given to', () => {
    expect(natsPermissions('dashboard', undefined, 'ops-dash').subscribe.allow).toEqual(['_INBOX_ops-dash.>']);
    expect(natsInboxPrefix('defender')).toBe('_INBOX_defender');
  });

  it('follows renamed buckets', () => {
    const p = natsPermissions('controller', { stableIds: 'a', heartbeats: 'b', assignments: 'map-x', elections: 'e' });
    expect(p.publish.allow).toContain('$KV.map-x.>');
    expect(p.publish.allow).not.toContain('$KV.defender-assignments.>');
  });
});

describe('natsAuthorizationConfig', () => {
  it('writes one user per identity, with a literal password or a variable nats-server resolves', () => {
    const conf = natsAuthorizationConfig([
      { user: 'ctl', role: 'controller', password: 'controller-secret-1' },
      { user: 'dash', role: 'dashboard', passwordEnv: 'DASHBOARD_NATS_PASSWORD' },
    ]);
    expect(conf).toContain('user: "ctl"');
    expect(conf).toContain('password: "controller-secret-1"');
    expect(conf).toContain('password: $DASHBOARD_NATS_PASSWORD');
    expect(conf).toContain('"$KV.defender-assignments.>"');
  });

  it('writes a user identified by its client certificate without a password (mutual TLS per role)', () => {
    const conf = natsAuthorizationConfig([{ user: 'defender', role: 'defender', certificate: true }]);
    expect(conf).toContain('user: "defender"');
    expect(conf).toContain('# identified by its client certificate (DNS:defender)');
    expect(conf).not.toContain('password');
  });

  it('names every bad user, password, variable and duplicate at once', () => {
    expect(() =>
      natsAuthorizationConfig([
        { user: 'has space', role: 'dashboard', password: 'long-enough-password' },
        { user: 'x', role: 'dashboard', password: 'short' },
        { user: 'x', role: 'controller', passwordEnv: 'lower-case' },
      ]),
    ).toThrow('NATS users: user "has space": 1-128 of [A-Za-z0-9_-]; password of x: 12-128 of [A-Za-z0-9._-]; password variable of x: [A-Z_][A-Z0-9_]*; user x listed twice');
  });
});
