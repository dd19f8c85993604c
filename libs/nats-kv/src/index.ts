export * from './lib/errors';
export * from './lib/buckets';
export * from './lib/stable-ids';
export * from './lib/heartbeats';
export * from './lib/assignment-map';
export * from './lib/streams';
export * from './lib/notifications';
