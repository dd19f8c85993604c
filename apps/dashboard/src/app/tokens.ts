/** The validated DashboardConfig. */
export const DASHBOARD_CONFIG = Symbol('DASHBOARD_CONFIG');
/** The AuthPolicy (auth/auth.ts) built from the config. */
export const AUTH_POLICY = Symbol('AUTH_POLICY');
/** The FailedAuthLimiter (auth/failed-auth-limiter.ts) shared by the middleware and /api/v1/session. */
export const FAILED_AUTH_LIMITER = Symbol('FAILED_AUTH_LIMITER');
