import fc from 'fast-check';
import { chamberKey, isValidId, parseChamberKey, sameChamber } from './chamber';

describe('chamber keys', () => {
  it.each([
    ['tool001:chamber1', { toolId: 'tool001', chamberId: 'chamber1' }],
    ['T-9_x:PM.2', { toolId: 'T-9_x', chamberId: 'PM.2' }],
  ])('parses %s', (key, ref) => {
    expect(parseChamberKey(key)).toEqual(ref);
    expect(chamberKey(ref)).toBe(key);
  });

  it.each(['', 'tool', 'a:b:c', ':b', 'a:', 'a b:c', 'a:\u0000'])('rejects %j', (key) => {
    expect(() => parseChamberKey(key)).toThrow(/invalid chamber key/);
  });

  it('round-trips every valid pair (property)', () => {
    const id = fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/);
    fc.assert(
      fc.property(id, id, (toolId, chamberId) => {
        const ref = { toolId, chamberId };
        expect(isValidId(toolId)).toBe(true);
        const back = parseChamberKey(chamberKey(ref));
        expect(sameChamber(back, ref)).toBe(true);
      }),
      { seed: 20240501, numRuns: 300 },
    );
  });
});
