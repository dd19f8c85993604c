import { natsAppEnvFor, natsConnectOptionsFor, natsRoleOfApp, TEST_NATS_DIAL_TIMEOUT_MS, testNatsUsers } from './nats-auth';

const BLOCK = [
  'authorization {',
  '  users: [',
  '    {',
  '      user: "defender"',
  '      password: $NATS_DEFENDER_PASSWORD',
  '      permissions: { publish: { allow: ["$KV.stable-ids.>"] } }',
  '    }',
  '    {',
  '      user: "dashboard"',
  '      password: $NATS_DASHBOARD_PASSWORD',
  '    }',
  '  ]',
  '}',
  '',
].join('\n');

describe('testNatsUsers', () => {
  it('writes a fresh password for each user and adds an unrestricted fixture user to the same list', () => {
    const a = testNatsUsers(BLOCK);
    const b = testNatsUsers(BLOCK);
    expect(Object.keys(a.users)).toEqual(['defender', 'dashboard']);
    expect(a.users['defender']!.pass).not.toEqual(b.users['defender']!.pass);
    expect(a.config).not.toContain('$NATS_');
    expect(a.config).toContain(`user: "defender"\n      password: ${JSON.stringify(a.users['defender']!.pass)}`);
    expect(a.config).toContain(`user: "test-fixture"\n      password: ${JSON.stringify(a.fixture.pass)}\n    }\n  ]\n}`);
    expect(a.config.match(/permissions/g)).toHaveLength(1);
  });

  it('refuses a block with a written-in password, none at all, or the fixture already a user', () => {
    expect(() => testNatsUsers(BLOCK.replace('$NATS_DASHBOARD_PASSWORD', '"literal-password"'))).toThrow(/found 1 of 2 passwords/);
    expect(() => testNatsUsers('authorization {\n  users: [\n  ]\n}\n')).toThrow(/found 0 of 0/);
    expect(() => testNatsUsers(BLOCK, 'dashboard')).toThrow(/already a user/);
  });
});

describe('client options and app variables of a test server', () => {
  const target = {
    url: 'nats://127.0.0.1:4222',
    tls: { caFile: '/pki/ca.crt', certFile: '/pki/c.crt', keyFile: '/pki/c.key' },
    users: { fixture: { user: 'test-fixture', pass: 'f' }, users: { controller: { user: 'controller', pass: 'c' } } },
  };

  it("a role's user, or the fixture's without a role; an unknown role is an error", () => {
    // A role's user subscribes to its own inboxes only (libs/nats-kv natsInboxPrefix, issue 50).
    // The first dial's hang guard is generous (the client's 20 s default failed beside two CPU hogs).
    expect(natsConnectOptionsFor(target, 'controller')).toEqual({ servers: target.url, tls: target.tls, user: 'controller', pass: 'c', inboxPrefix: '_INBOX_controller', timeout: TEST_NATS_DIAL_TIMEOUT_MS });
    expect(natsConnectOptionsFor(target)).toMatchObject({ user: 'test-fixture', pass: 'f' });
    expect(natsConnectOptionsFor(target)).not.toHaveProperty('inboxPrefix');
    expect(natsAppEnvFor(target, 'controller')).toEqual({
      NATS_SERVERS: target.url,
      NATS_TLS_CA_FILE: '/pki/ca.crt',
      NATS_TLS_CERT_FILE: '/pki/c.crt',
      NATS_TLS_KEY_FILE: '/pki/c.key',
      NATS_USER: 'controller',
      NATS_PASSWORD: 'c',
    });
    expect(() => natsAppEnvFor(target, 'publisher')).toThrow(/no NATS user for role "publisher" \(known: controller\)/);
    expect(() => natsConnectOptionsFor({ url: target.url }, 'controller')).toThrow(/without authentication/);
    expect(natsConnectOptionsFor({ url: target.url })).toEqual({ servers: target.url, timeout: TEST_NATS_DIAL_TIMEOUT_MS });
  });

  it('maps each app to its NATS role', () => {
    expect(natsRoleOfApp('assignment-controller')).toBe('controller');
    expect(() => natsRoleOfApp('fab-sim')).toThrow(/no NATS role/);
  });
});
