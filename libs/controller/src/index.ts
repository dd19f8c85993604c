export * from './lib/controller-env';
export * from './lib/controller.module';
export * from './lib/tokens';
export * from './lib/engine/ports';
export * from './lib/engine/controller-engine';
export { LeadershipService, EXIT_CONTROLLER_FAILED } from './lib/leadership/leadership.service';
