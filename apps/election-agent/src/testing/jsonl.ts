/** Parses the JSON lines of a process's output (other lines are ignored). */
export function jsonLines<T = Record<string, unknown>>(text: string): T[] {
  return text
    .split('\n')
    .filter((l) => l.trim().startsWith('{'))
    .map((l) => JSON.parse(l) as T);
}

/** One line of a candidate process (src/testing/candidate.process.ts). */
export interface CandidateEvent {
  event: 'started' | 'elected' | 'deposed' | 'lease' | 'act' | 'error' | 'stopped';
  candidate: string;
  at: number;
  election?: string;
  token?: number;
  reason?: string;
  acquiredAtMs?: number;
  leaseExpiresAtMs?: number;
  message?: string;
}
