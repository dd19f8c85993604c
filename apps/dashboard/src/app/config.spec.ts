import { ConfigValidationError, loadConfig } from '@defender/nest-common';
import { dashboardEnvSchema, isLoopback } from './config';

const TOKEN = 'operator-token-0123456789abcdef';
const load = (env: Record<string, string>) => loadConfig('dashboard', dashboardEnvSchema, env);
const problems = (env: Record<string, string>) => {
  try {
    load(env);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigValidationError)) throw err;
    return err.problems.map((p) => `${p.variable}: ${p.message}`);
  }
};

describe('dashboard authentication settings (fail closed)', () => {
  it('knows loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost']) expect([h, isLoopback(h)]).toEqual([h, true]);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'dashboard', '128.0.0.1']) expect([h, isLoopback(h)]).toEqual([h, false]);
  });

  it('runs without authentication only on a loopback address', () => {
    expect(load({ HTTP_HOST: '127.0.0.1' }).DASHBOARD_AUTH).toBe('none');
    // Unset, DASHBOARD_AUTH is reported the config loader's way ("is required" or the message with "unset").
    expect(problems({})).toEqual([
      expect.stringMatching(/^DASHBOARD_AUTH: (is required|none \(no authentication\) is allowed only on a loopback HTTP_HOST)/),
      expect.stringMatching(/^\(environment\): the dashboard binds HTTP_HOST=0\.0\.0\.0, not a loopback address, without authentication: set DASHBOARD_AUTH=token/),
    ]);
    expect(problems({ HTTP_HOST: '0.0.0.0', DASHBOARD_AUTH: 'none' })).toEqual([
      expect.stringMatching(/^DASHBOARD_AUTH: none \(no authentication\) is allowed only on a loopback HTTP_HOST .* and HTTP_HOST is 0\.0\.0\.0/),
      expect.stringContaining('(environment): '),
    ]);
  });

  it('token mode needs tokens of at least 16 characters, each with one role, never echoed', () => {
    expect(load({ DASHBOARD_AUTH: 'token', DASHBOARD_OPERATOR_TOKENS: `${TOKEN}, ${TOKEN}-new` }).DASHBOARD_OPERATOR_TOKENS).toEqual([TOKEN, `${TOKEN}-new`]);
    expect(problems({ DASHBOARD_AUTH: 'token' })).toEqual(['DASHBOARD_AUTH: token needs DASHBOARD_OPERATOR_TOKENS and/or DASHBOARD_VIEWER_TOKENS; got "token"']);
    const short = problems({ DASHBOARD_AUTH: 'token', DASHBOARD_VIEWER_TOKENS: 'short-secret' });
    expect(short).toEqual([expect.stringMatching(/^DASHBOARD_VIEWER_TOKENS: each token must be at least 16 characters .*\(value hidden\)$/)]);
    expect(problems({ DASHBOARD_AUTH: 'token', DASHBOARD_VIEWER_TOKENS: TOKEN, DASHBOARD_OPERATOR_TOKENS: TOKEN })).toEqual([expect.stringContaining('DASHBOARD_OPERATOR_TOKENS: a token is both a viewer and an operator token')]);
    expect(problems({ DASHBOARD_AUTH: 'token', DASHBOARD_VIEWER_TOKENS: TOKEN, DASHBOARD_OPERATOR_TOKENS: TOKEN }).join('\n')).not.toContain(TOKEN);
  });

  it('proxy mode needs the trusted proxies; settings of a mode that is off are a mistake', () => {
    const c = load({ DASHBOARD_AUTH: 'proxy', DASHBOARD_TRUSTED_PROXIES: '10.0.0.0/8, fd00::1', DASHBOARD_PROXY_USER_HEADER: 'X-Auth-Request-User', DASHBOARD_OPERATOR_GROUPS: 'fab-operators' });
    expect(c).toMatchObject({ DASHBOARD_TRUSTED_PROXIES: ['10.0.0.0/8', 'fd00::1'], DASHBOARD_PROXY_USER_HEADER: 'x-auth-request-user', DASHBOARD_PROXY_GROUPS_HEADER: 'x-forwarded-groups', DASHBOARD_OPERATOR_GROUPS: ['fab-operators'] });
    expect(problems({ DASHBOARD_AUTH: 'proxy' })).toEqual([expect.stringContaining('DASHBOARD_AUTH: proxy needs DASHBOARD_TRUSTED_PROXIES')]);
    expect(problems({ DASHBOARD_AUTH: 'proxy', DASHBOARD_TRUSTED_PROXIES: '10.0.0.0/40' })).toEqual([expect.stringMatching(/^DASHBOARD_TRUSTED_PROXIES: each entry must be an IP address or CIDR block/)]);
    expect(problems({ HTTP_HOST: '127.0.0.1', DASHBOARD_OPERATOR_TOKENS: TOKEN })).toEqual([expect.stringMatching(/^DASHBOARD_AUTH: (is required|is none, but tokens or proxy settings are set)/)]);
    expect(problems({ DASHBOARD_AUTH: 'token', DASHBOARD_OPERATOR_TOKENS: TOKEN, DASHBOARD_TRUSTED_PROXIES: '10.0.0.1' })).toEqual([expect.stringContaining('they need DASHBOARD_AUTH=proxy')]);
    expect(problems({ DASHBOARD_AUTH: 'tokens' })).toEqual([expect.stringMatching(/^DASHBOARD_AUTH: must be token, proxy or none/)]);
  });
});
