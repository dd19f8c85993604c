import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The workspace root. */
export const REPO = join(__dirname, '..', '..', '..', '..');

/** Environment marker put on every process a local fab starts (finds leftovers of a killed launcher). */
export const RUN_MARKER = 'DEFENDER_LOCAL_FAB';

/** Mode of the files only the fab's user may read (logs; with {@link PRIVATE_UMASK}, what its processes create). */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of the fab's directories (its run directory, the logs). */
export const PRIVATE_DIR_MODE = 0o700;
/** The umask the fab's processes inherit: what they create is their owner's alone. */
export const PRIVATE_UMASK = 0o077;

export type Role = 'nats' | 'election-agent' | 'assignment-controller' | 'defender' | 'dashboard' | 'fab-sim';

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly at: Date;
}

/**
 * A child process of the local fab, in its own process group (so a Ctrl-C on the terminal reaches
 * only the launcher, which stops everything in order), output appended to a log file.
 */
export class ManagedProcess {
  exit: ExitInfo | undefined;
  readonly exited: Promise<ExitInfo>;
  readonly startedAt = new Date();

  private constructor(
    readonly name: string,
    readonly role: Role,
    readonly child: ChildProcess,
    readonly logFile: string | null,
    /** HTTP port (apps), or the client port (nats). */
    readonly port: number,
    /** gRPC port of an election agent. */
    readonly extraPort?: number,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exit = { code, signal, at: new Date() };
        resolve(this.exit);
      });
    });
  }

  static spawn(opts: {
    name: string;
    role: Role;
    command: string;
    args: string[];
    env: Record<string, string>;
    logFile: string | null;
    port: number;
    extraPort?: number;
    /** Share the launcher's terminal (the simulator's progress bar). */
    inheritStdio?: boolean;
  }): ManagedProcess {
    // Logs, and every file the process creates (the SQLite store, its journal), are its owner's
    // alone (issue 50): the log is made 0600, and the child inherits umask 077.
    const fd = opts.logFile && !opts.inheritStdio ? openSync(opts.logFile, 'a', PRIVATE_FILE_MODE) : undefined;
    const umask = process.umask(PRIVATE_UMASK);
    let child: ChildProcess;
    try {
      child = spawn(opts.command, opts.args, {
        cwd: REPO,
        env: opts.env,
        detached: true,
        stdio: opts.inheritStdio ? ['ignore', 'inherit', 'inherit'] : ['ignore', fd ?? 'ignore', fd ?? 'ignore'],
      });
    } finally {
      process.umask(umask);
      if (fd !== undefined) closeSync(fd);
    }
    return new ManagedProcess(opts.name, opts.role, child, opts.logFile, opts.port, opts.extraPort);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exit === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  signal(sig: NodeJS.Signals): void {
    if (this.alive) this.child.kill(sig);
  }

  /** Sends `sig` and waits for the exit; SIGKILL after `graceMs`. */
  async stop(sig: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<ExitInfo> {
    if (!this.alive) return this.exit ?? (await this.exited);
    this.child.kill(sig);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const res = await this.exited;
    clearTimeout(timer);
    return res;
  }

  /** The last `lines` lines of the log file. */
  tail(lines = 20): string {
    if (!this.logFile || !existsSync(this.logFile)) return '';
    return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines - 1).join('\n');
  }
}

/** What a run's pid file records (to clean up after a launcher that was killed with SIGKILL). */
interface PidFile {
  readonly runDir: string;
  /** The launcher: while it lives, its processes are not leftovers. */
  readonly launcher: number;
  readonly pids: number[];
}

function environOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch (err) {
    // The process is gone, or not ours to read.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'ESRCH') return null;
    throw err;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Kills the processes of earlier local fabs whose launcher died without stopping them (SIGKILL,
 * a closed terminal): every `<root>/<run>/pids.json` whose launcher is gone, and of its processes
 * only those whose environment carries that run's marker, so nothing else is ever touched.
 * @returns the pids killed.
 */
export function killLeftovers(root: string): number[] {
  if (!existsSync(root)) return [];
  const killed: number[] = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const file = join(root, entry.name, PID_FILE_NAME);
    if (!existsSync(file)) continue;
    let rec: PidFile;
    try {
      rec = JSON.parse(readFileSync(file, 'utf8')) as PidFile;
    } catch (err) {
      if (err instanceof SyntaxError) continue;
      throw err;
    }
    if (isAlive(rec.launcher)) continue;
    for (const pid of rec.pids ?? []) {
      const env = environOf(pid);
      if (env === null || !env.split('\0').includes(`${RUN_MARKER}=${rec.runDir}`)) continue;
      try {
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    }
    rmSync(file, { force: true });
  }
  return killed;
}

/** Name of the pid file in a run directory. */
export const PID_FILE_NAME = 'pids.json';

/** Records the live processes of the run in `<runDir>/pids.json`. */
export function writePidFile(runDir: string, procs: readonly ManagedProcess[], launcher = process.pid): void {
  const rec: PidFile = { runDir, launcher, pids: procs.flatMap((p) => (p.alive && p.pid !== undefined ? [p.pid] : [])) };
  writeFileSync(join(runDir, PID_FILE_NAME), JSON.stringify(rec) + '\n');
}
