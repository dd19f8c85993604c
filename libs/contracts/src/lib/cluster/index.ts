export * from './parse';
export * from './ids';
export * from './heartbeat';
export * from './stable-id';
export * from './assignment-map';
export * from './notification';
