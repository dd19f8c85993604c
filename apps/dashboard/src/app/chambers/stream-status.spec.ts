import { streamStatusOf } from './chamber.service';

describe('streamStatusOf (a chamber page: does its mark count in the stream NATS holds now? ADR 0007)', () => {
  it.each([
    ['a mark bound to the current stream', 'created-1', 'created-1', 'bound'],
    ['a mark of a recreated stream: paused until re-based', 'created-1', 'created-2', 'mismatch'],
    ['a mark no owner bound yet', undefined, 'created-1', 'unbound'],
    ['the stream missing or unread', 'created-1', null, 'unknown'],
  ] as const)('%s', (_what, recorded, current, status) => {
    expect(streamStatusOf(recorded, current)).toBe(status);
  });
});
