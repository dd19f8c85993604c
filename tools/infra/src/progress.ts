/**
 * One progress line for long commands (fab-sim, the chaos soak and suites, bench:fab, Cassandra's
 * first download): on a terminal the line is rewritten in place; otherwise (CI, a pipe, a log file)
 * it is printed as a plain line at most every `plainEveryMs`, so logs stay readable.
 */

/** Where progress goes: stderr by default; `isTTY` and `columns` as on a tty.WriteStream. */
export interface ProgressStream {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/** `bar`: rewrite one line; `plain`: a line every `plainEveryMs`; `none`: silent; `auto`: bar on a terminal, else plain. */
export type ProgressMode = 'auto' | 'bar' | 'plain' | 'none';

export class ProgressLine {
  readonly mode: 'bar' | 'plain' | 'none';
  private lastPlain = Number.NEGATIVE_INFINITY;
  private shown = '';

  constructor(
    private readonly out: ProgressStream = process.stderr,
    mode: ProgressMode = 'auto',
    private readonly plainEveryMs = 10_000,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.mode = mode === 'auto' ? (out.isTTY ? 'bar' : 'plain') : mode;
  }

  /** Shows `line` as the current progress (plain mode: only when `plainEveryMs` has passed, or `force`). */
  update(line: string, force = false): void {
    if (this.mode === 'none') return;
    if (this.mode === 'bar') {
      if (line === this.shown) return;
      this.shown = line;
      const cols = this.out.columns ?? 160;
      this.out.write(`\r\x1b[2K${line.slice(0, Math.max(1, cols - 1))}`);
      return;
    }
    const t = this.now();
    if (!force && t - this.lastPlain < this.plainEveryMs) return;
    this.lastPlain = t;
    this.out.write(`${line}\n`);
  }

  /** Prints a message line without garbling the progress line (which is drawn again at the next update). */
  log(line: string): void {
    if (this.mode === 'bar' && this.shown !== '') {
      this.out.write(`\r\x1b[2K${line}\n`);
      this.out.write(this.shown.slice(0, Math.max(1, (this.out.columns ?? 160) - 1)));
      return;
    }
    this.out.write(`${line}\n`);
  }

  /** The final line: printed in every mode but `none`, and the progress line is left behind. */
  done(line: string): void {
    if (this.mode === 'none') return;
    this.out.write(this.mode === 'bar' ? `\r\x1b[2K${line}\n` : `${line}\n`);
    this.shown = '';
  }
}

/** `12s`, `3m05s`, `1h02m`: a duration for a progress line. */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(sec).padStart(2, '0')}s` : `${sec}s`;
}

/** A text bar `▕███░░░▏` for a fraction in [0, 1]. */
export function textBar(fraction: number, width = 24): string {
  const f = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : 0;
  const full = Math.round(f * width);
  return `▕${'█'.repeat(full)}${'░'.repeat(width - full)}▏`;
}

/** Time left at the rate so far (`done` of `total` after `elapsedMs`), or undefined before any progress. */
export function remainingMs(done: number, total: number, elapsedMs: number): number | undefined {
  if (!(done > 0) || !(elapsedMs > 0) || total <= done) return total <= done ? 0 : undefined;
  return ((total - done) * elapsedMs) / done;
}
