import type { DefenderState } from '@defender/contracts';

/**
 * Numeric codes for the `defender_state` gauge (seed 000: 0=INIT, 1=CLAIMING_ID, 2=ELECTION, 3=STABLE,
 * ...). ELECTION is the seeds' name for the follower wait before the first map; we call it FOLLOWER.
 */
export const DEFENDER_STATE_CODE: Readonly<Record<DefenderState, number>> = {
  INITIALIZATION: 0,
  CLAIMING_ID: 1,
  FOLLOWER: 2,
  STABLE: 3,
  SHUTDOWN: 9,
};

const ALLOWED: Readonly<Record<DefenderState, readonly DefenderState[]>> = {
  INITIALIZATION: ['CLAIMING_ID', 'SHUTDOWN'],
  CLAIMING_ID: ['FOLLOWER', 'SHUTDOWN'],
  FOLLOWER: ['STABLE', 'SHUTDOWN'],
  STABLE: ['SHUTDOWN'],
  SHUTDOWN: [],
};

/** Thrown on a transition the state machine does not allow (a programming error). */
export class IllegalTransitionError extends Error {
  override readonly name = 'IllegalTransitionError';
}

/** The defender process state machine (seed 002), transitions checked. */
export class DefenderLifecycle {
  private current: DefenderState = 'INITIALIZATION';
  private readonly enteredAt: Record<string, number> = {};

  constructor(private readonly now: () => number) {
    this.enteredAt[this.current] = now();
  }

  get state(): DefenderState {
    return this.current;
  }

  get code(): number {
    return DEFENDER_STATE_CODE[this.current];
  }

  /** Moves to `next`; moving to the current state is a no-op. */
  to(next: DefenderState): void {
    if (next === this.current) return;
    if (!ALLOWED[this.current].includes(next)) {
      throw new IllegalTransitionError(`defender state ${this.current} -> ${next} is not allowed`);
    }
    this.current = next;
    this.enteredAt[next] = this.now();
  }

  /** When the process entered `state` (epoch ms), if it did. */
  entered(state: DefenderState): number | undefined {
    return this.enteredAt[state];
  }
}
