export { controllerEnvShape, controllerOnlyEnvSchema } from './lib/controller-env';
export type { ControllerSettings } from './lib/controller-env';
export { ControllerModule } from './lib/controller.module';
export { CONTROLLER_SETTINGS } from './lib/tokens';
export type { ChamberSource, HeartbeatPort, MapPort, TermPort } from './lib/engine/ports';
export { ControllerEngine } from './lib/engine/controller-engine';
export type {
  EngineConfig,
  EngineDeps,
  EngineObserver,
  LoadBalancingConfig,
} from './lib/engine/controller-engine';
export { LeadershipService, EXIT_CONTROLLER_FAILED } from './lib/leadership/leadership.service';
