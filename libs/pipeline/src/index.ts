export * from './lib/ports';
export * from './lib/semaphore';
export * from './lib/chamber-worker';
export { eventMsgId, markAfter, publishedPrefix, runEvents, type RunEventContext } from './lib/outbox';
export * from './lib/evaluator';
