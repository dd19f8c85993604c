import type { DashboardConfig } from '../config';
import { AuthPolicy, TokenTable, TrustedProxies } from './auth';

/** The authentication policy of a validated configuration. */
export function authPolicyFromConfig(config: DashboardConfig): AuthPolicy {
  const tokens = new TokenTable({ viewer: config.DASHBOARD_VIEWER_TOKENS, operator: config.DASHBOARD_OPERATOR_TOKENS });
  if (config.DASHBOARD_AUTH !== 'proxy') return { mode: config.DASHBOARD_AUTH, tokens };
  return {
    mode: 'proxy',
    tokens,
    proxy: {
      trusted: new TrustedProxies(config.DASHBOARD_TRUSTED_PROXIES),
      userHeader: config.DASHBOARD_PROXY_USER_HEADER,
      groupsHeader: config.DASHBOARD_PROXY_GROUPS_HEADER,
      operatorGroups: config.DASHBOARD_OPERATOR_GROUPS,
      viewerGroups: config.DASHBOARD_VIEWER_GROUPS,
    },
  };
}
