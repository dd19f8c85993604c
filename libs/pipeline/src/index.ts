export * from './lib/ports';
export * from './lib/semaphore';
export * from './lib/chamber-worker';
export * from './lib/evaluator';
