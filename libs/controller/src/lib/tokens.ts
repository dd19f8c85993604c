/** The validated ControllerSettings. */
export const CONTROLLER_SETTINGS = Symbol('CONTROLLER_SETTINGS');
