/** The validated DefenderConfig. */
export const DEFENDER_CONFIG = Symbol('DEFENDER_CONFIG');
