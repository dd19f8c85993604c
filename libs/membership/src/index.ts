export * from './lib/ownership';
export * from './lib/heartbeat-clock';
export * from './lib/defender-state';
export * from './lib/build-map';
export * from './lib/owner-epoch';
