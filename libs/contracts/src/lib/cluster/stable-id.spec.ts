import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { InvalidMessageError } from './invalid-message';
import { MAX_CLAIM_GENERATION, parseStableIdClaim, type StableIdClaim } from './stable-id';

const T = '2026-11-27T10:00:00.000Z';
const full: StableIdClaim = {
  schema: 1,
  defenderId: 'defender-12',
  ownerId: 'pod-uid-1',
  podName: 'defender-abc',
  claimedAt: T,
  refreshedAt: T,
  generation: 3,
  intervalSeconds: 2,
  released: true,
};
const parse = (o: unknown) => parseStableIdClaim(JSON.stringify(o));
const reason = (o: unknown): string => {
  try {
    parse(o);
  } catch (err) {
    if (err instanceof InvalidMessageError) return err.reason;
    throw err;
  }
  return 'accepted';
};

describe('parseStableIdClaim (hand-checked, no zod)', () => {
  it('reads a claim with every field, and one without the optional ones; from bytes too', () => {
    expect(parse(full)).toEqual(full);
    const { podName: _p, released: _r, ...minimal } = full;
    expect(parse(minimal)).toEqual(minimal);
    expect(parseStableIdClaim(new TextEncoder().encode(JSON.stringify(full)))).toEqual(full);
  });

  it('drops fields it does not know', () => {
    expect(parse({ ...full, extra: 'x' })).toEqual(full);
  });

  it.each([
    ['schema', { ...full, schema: 2 }, /^schema:/],
    ['defenderId', { ...full, defenderId: 'defender-01' }, /^defenderId:/],
    ['defenderId (7 digits)', { ...full, defenderId: 'defender-1234567' }, /^defenderId:/],
    ['ownerId (empty)', { ...full, ownerId: '' }, /^ownerId:/],
    ['ownerId (129)', { ...full, ownerId: 'o'.repeat(129) }, /^ownerId:/],
    ['podName (254)', { ...full, podName: 'p'.repeat(254) }, /^podName:/],
    ['claimedAt (no zone)', { ...full, claimedAt: '2026-11-27T10:00:00' }, /^claimedAt:/],
    ['claimedAt (no day)', { ...full, claimedAt: '2026-02-30T10:00:00Z' }, /^claimedAt:/],
    ['refreshedAt (words)', { ...full, refreshedAt: 'yesterday' }, /^refreshedAt:/],
    ['generation (fraction)', { ...full, generation: 1.5 }, /^generation:/],
    ['generation (negative)', { ...full, generation: -1 }, /^generation:/],
    ['generation (above 21 bits)', { ...full, generation: MAX_CLAIM_GENERATION + 1 }, /^generation:/],
    ['intervalSeconds (0)', { ...full, intervalSeconds: 0 }, /^intervalSeconds:/],
    ['released (string)', { ...full, released: 'yes' }, /^released:/],
    ['root (array)', [full], /^\(root\)/],
    ['root (null)', null, /^\(root\)/],
  ])('refuses a bad %s, naming it', (_what, claim, re) => {
    expect(reason(claim)).toMatch(re);
  });

  it('accepts the times the apps and other zones write, and the last day of February in a leap year', () => {
    for (const t of ['2028-02-29T23:59:59Z', '2026-11-27T10:00:00+01:00', '2026-11-27T10:00:00.123456789-05:30']) {
      expect(reason({ ...full, claimedAt: t, refreshedAt: t })).toBe('accepted');
    }
    expect(reason({ ...full, claimedAt: '2027-02-29T00:00:00Z' })).toMatch(/^claimedAt:/);
    expect(reason({ ...full, generation: MAX_CLAIM_GENERATION })).toBe('accepted');
  });

  it('says invalid-json for bytes that are not JSON', () => {
    expect(() => parseStableIdClaim('{')).toThrow(expect.objectContaining({ reason: 'invalid-json', kind: 'stable-id claim' }));
  });

  it('the @defender/contracts/stable-id entry point loads no zod (the heartbeat thread uses it)', () => {
    const root = join(__dirname, '..', '..', '..', '..', '..');
    const out = execFileSync(
      process.execPath,
      ['-r', join(root, 'tools', 'scripts', 'register.js'), '-e', `const before = new Set(Object.keys(require.cache)); require(${JSON.stringify(join(root, 'libs', 'contracts', 'src', 'stable-id.ts'))}); console.log(JSON.stringify(Object.keys(require.cache).filter((k) => !before.has(k) && k.includes('/node_modules/'))))`],
      { encoding: 'utf8' },
    );
    expect(JSON.parse(out)).toEqual([]);
  });
});
