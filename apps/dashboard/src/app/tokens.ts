/** The validated DashboardConfig. */
export const DASHBOARD_CONFIG = Symbol('DASHBOARD_CONFIG');
