import { natsAuthorizationConfig, natsPermissions, NATS_ROLES, roleParts } from './permissions';

describe('natsPermissions', () => {
  it('lets each bucket and stream subject be written by one app role only (and the embedded controller\'s defender)', () => {
    const writers = (subject: string) => NATS_ROLES.filter((r) => natsPermissions(r).publish.allow.includes(subject));
    expect(writers('$KV.defender-assignments.>')).toEqual(['controller', 'defender-controller']);
    expect(writers('$KV.elections.>')).toEqual(['election-agent']);
    expect(writers('$KV.stable-ids.>')).toEqual(['defender', 'defender-controller']);
    expect(writers('$KV.defender-heartbeats.>')).toEqual(['defender', 'defender-controller']);
    expect(writers('dc.*.*.completed')).toEqual(['publisher']);
    expect(writers('defense.alarms.>')).toEqual(['defender', 'defender-controller']);
  });

  it('gives the embedded controller\'s defender exactly the writes of a defender and a controller', () => {
    const writes = (r: (typeof NATS_ROLES)[number]) => natsPermissions(r).publish.allow;
    expect(new Set(writes('defender-controller'))).toEqual(new Set([...writes('defender'), ...writes('controller')]));
    expect(roleParts('defender-controller')).toEqual(['defender', 'controller']);
    expect(roleParts('dashboard')).toEqual(['dashboard']);
  });

  it('gives nobody a wildcard write, a stream deletion or a purge', () => {
    for (const role of NATS_ROLES) {
      const allow = natsPermissions(role).publish.allow;
      expect(allow).not.toContain('>');
      expect(allow.filter((s) => /STREAM\.(DELETE|PURGE|MSG\.DELETE)|^\$KV\.>$|^\$JS\.API\.>$/.test(s))).toEqual([]);
    }
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

  it('names every bad user, password, variable and duplicate at once', () => {
    expect(() =>
      natsAuthorizationConfig([
        { user: 'has space', role: 'dashboard', password: 'long-enough-password' },
        { user: 'x', role: 'dashboard', password: 'short' },
        { user: 'x', role: 'controller', passwordEnv: 'lower-case' },
      ]),
    ).toThrow('NATS users: user "has space": 1-128 of [A-Za-z0-9._-]; password of x: 12-128 of [A-Za-z0-9._-]; password variable of x: [A-Z_][A-Z0-9_]*; user x listed twice');
  });
});
