import { soakProgressLine } from './soak';

describe('the soak progress line', () => {
  it('shows elapsed and left, faults so far by kind (most first), processes, runs and unexpected exits', () => {
    const line = soakProgressLine({
      elapsedMs: 150_000,
      totalMs: 600_000,
      faults: new Map([
        ['nats-restart', 1],
        ['kill-defender', 7],
      ]),
      defenders: 5,
      runs: 4312,
      unexpectedExits: 0,
      phase: 'faults',
    });
    expect(line).toBe('soak ▕██████░░░░░░░░░░░░░░░░░░▏ 2m30s of 10m00s · 7m30s left · 8 faults (kill-defender 7, nats-restart 1) · 5 defenders live · 4312 runs published · 0 unexpected exits');
  });

  it('says when the faults are over and the cluster is settling', () => {
    const line = soakProgressLine({ elapsedMs: 600_000, totalMs: 600_000, faults: new Map(), defenders: 3, runs: 0, unexpectedExits: 1, phase: 'settling' });
    expect(line).toContain('faults done after 10m00s; settling, then the invariants are checked');
    expect(line).toContain('0 faults ·');
    expect(line).toContain('1 unexpected exits');
  });
});
