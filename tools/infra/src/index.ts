export * from './ports';
export * from './process';
export * from './random';
export * from './nats';
export * from './cassandra';
export * from './jest/infra-env';
export * from './jest/infra';
export * from './jest/app-process-suite';
