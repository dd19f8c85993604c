import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import {
  COMMANDS,
  commandHelp,
  completionScript,
  GLOBAL_OPTIONS,
  parseCommandLine,
  SHELLS,
  usage,
  UsageError,
  type CommandName,
} from './cli';
import { REPO } from './context';

const names = Object.keys(COMMANDS) as CommandName[];
const flagsOf = (table: Record<string, { short?: string }>) =>
  Object.entries(table).flatMap(([name, o]) => [
    name.length === 1 ? `-${name}` : `--${name}`,
    ...(o.short && o.short !== name ? [`-${o.short}`] : []),
  ]);

function usageError(argv: string[]): UsageError {
  try {
    parseCommandLine(argv);
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
  throw new Error(`no usage error for ${argv.join(' ')}`);
}

describe('defenderctl command line', () => {
  it.each([
    [['status'], 'status', [], {}],
    [['--json', '--nats', 'nats://h:4222', 'status'], 'status', [], { json: true, nats: 'nats://h:4222' }],
    [['status', '--json'], 'status', [], { json: true }],
    [['assignments', '--defender', '2'], 'assignments', [], { defender: '2' }],
    [['explain', 'ETCH03:PM2'], 'explain', ['ETCH03:PM2'], {}],
    [
      ['alarms', 'tail', '-n', '50', '-f', '--holds', '--chamber', 'ETCH01:PM1'],
      'alarms',
      ['tail'],
      { n: '50', follow: true, holds: true, chamber: 'ETCH01:PM1' },
    ],
    [['drain', 'defender-1', '--timeout', '30'], 'drain', ['defender-1'], { timeout: '30' }],
    [
      [
        'rebaseline',
        'ETCH01:PM2',
        '--reason',
        'wet clean',
        '--recipe',
        'R1',
        '--exclude',
        'run-1,run-2',
        '--min-runs',
        '30',
      ],
      'rebaseline',
      ['ETCH01:PM2'],
      { reason: 'wet clean', recipe: 'R1', exclude: 'run-1,run-2', 'min-runs': '30' },
    ],
    [
      ['--store', 'sqlite:/tmp/x.db', 'rebaseline', 'ETCH01:PM2', '--reason', 'r'],
      'rebaseline',
      ['ETCH01:PM2'],
      { store: 'sqlite:/tmp/x.db', reason: 'r' },
    ],
    [
      ['strategy', 'put', '--scope', 'chamber/ETCH01:PM2', '--file', 'pm2.json', '--author', 'alice'],
      'strategy',
      ['put'],
      { scope: 'chamber/ETCH01:PM2', file: 'pm2.json', author: 'alice' },
    ],
    [['strategy', 'show', 'ETCH01:PM2', '--recipe', 'R1'], 'strategy', ['show', 'ETCH01:PM2'], { recipe: 'R1' }],
    [['completion', 'zsh'], 'completion', ['zsh'], {}],
  ])('%j runs %s', (argv, command, args, values) => {
    const inv = parseCommandLine(argv);
    expect(inv).toMatchObject({ kind: 'run', command, args, values });
  });

  it.each([
    [
      ['status', '--defender', '3'],
      /unknown option --defender for status \(its options: none of its own; global: --json, --nats URL/,
    ],
    [
      ['assignments', '--reason', 'x'],
      /unknown option --reason for assignments \(its options: --defender N;/,
    ],
    [['explain', 'A:B', '-f'], /unknown option -f for explain/],
    [
      ['alarms', 'tail', '--defender', '1'],
      /unknown option --defender for alarms \(its options: -n N, -f, --follow, --holds, --chamber KEY;/,
    ],
    [
      ['drain', 'defender-1', '--reason', 'x'],
      /unknown option --reason for drain \(its options: --timeout SECONDS;/,
    ],
    [
      ['rebaseline', 'A:B', '--reason', 'x', '--timeout', '3'],
      /unknown option --timeout for rebaseline \(its options: --reason TEXT, --recipe R, --exclude RUN,\.\.\., --min-runs N;/,
    ],
    [
      ['--defender', '2', 'assignments'],
      /unknown option --defender before the command .*a command's own options go after it/,
    ],
    [['--bogus'], /unknown option --bogus before the command/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['status', 'extra'], /status takes no arguments/],
    [['explain'], /explain takes 1 argument \(<tool:chamber>\)/],
    [['alarms', 'head'], /alarms takes one of: tail/],
    [['completion', 'fish'], /completion takes one of: bash, zsh/],
    [['strategy', 'list'], /strategy takes one of: put, show/],
    [['strategy'], /strategy takes 1 to 2 arguments \(put\|show \[<tool:chamber>\]\)/],
    [
      ['strategy', 'show', 'A:B', '--reason', 'x'],
      /unknown option --reason for strategy \(its options: --scope SCOPE, --file DOC\.json, --author NAME, --recipe R;/,
    ],
    [['help', 'nope'], /unknown command "nope"/],
    [['assignments', '--defender'], /assignments: Option '--defender <value>' argument missing/],
  ])('%j is a usage error', (argv, message) => {
    expect(usageError(argv).message).toMatch(message);
  });

  it("a command's usage error carries that command's help", () => {
    expect(usageError(['status', '--defender', '3']).help).toBe(commandHelp('status'));
    expect(usageError(['frobnicate']).help).toBe(usage());
  });

  it.each([
    [['--help'], usage(), 0],
    [['-h'], usage(), 0],
    [[], usage(), 2],
    [['help'], usage(), 0],
    [['help', 'status'], commandHelp('status'), 0],
    [['status', '--help'], commandHelp('status'), 0],
    [['--help', 'rebaseline'], commandHelp('rebaseline'), 0],
    [['alarms', '-h'], commandHelp('alarms'), 0],
    // --help wins over a missing argument: asking how is never an error.
    [['rebaseline', '--help'], commandHelp('rebaseline'), 0],
  ])('%j prints help', (argv, text, exitCode) => {
    expect(parseCommandLine(argv)).toEqual({ kind: 'help', text, exitCode });
  });

  it.each(names)('help of %s names the command, each of its options and the global ones', (name) => {
    const text = commandHelp(name);
    expect(text).toMatch(new RegExp(`^Usage: defenderctl ${name}\\b`));
    for (const f of [...flagsOf(COMMANDS[name].options), ...flagsOf(GLOBAL_OPTIONS)])
      expect(text).toContain(f);
    expect(usage()).toContain(`  ${name}`);
  });

  it.each(SHELLS)('the %s completion script lists every command and option', (shell) => {
    const script = completionScript(shell);
    for (const name of names) {
      expect(script).toContain(name);
      for (const f of flagsOf(COMMANDS[name].options)) expect(script).toContain(f);
    }
    for (const f of flagsOf(GLOBAL_OPTIONS)) expect(script).toContain(f);
  });

  it("the bash completion completes commands, then the command's own options and words", () => {
    const complete = (...words: string[]) => {
      const line = ['defenderctl', ...words];
      const r = spawnSync(
        'bash',
        [
          '--norc',
          '--noprofile',
          '-c',
          `eval "$SCRIPT"; COMP_WORDS=(${line.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${line.length - 1}; _defenderctl; printf '%s\\n' "\${COMPREPLY[@]}"`,
        ],
        { env: { PATH: process.env['PATH'] ?? '', SCRIPT: completionScript('bash') }, encoding: 'utf8' },
      );
      expect(r.stderr).toBe('');
      return r.stdout.split('\n').filter(Boolean).sort();
    };
    expect(complete('')).toEqual([...names, ...flagsOf(GLOBAL_OPTIONS)].sort());
    expect(complete('--nats', 'nats://x', 're')).toEqual(['rebaseline']);
    expect(complete('assignments', '--')).toEqual([
      '--controller',
      '--defender',
      '--help',
      '--json',
      '--nats',
      '--store',
    ]);
    expect(complete('alarms', '')).toContain('tail');
    expect(complete('alarms', 'tail', '-')).toEqual(
      expect.arrayContaining(['-n', '-f', '--follow', '--holds', '--chamber']),
    );
    expect(complete('alarms', 'tail', '')).not.toContain('tail');
    expect(complete('completion', '')).toEqual(expect.arrayContaining(['bash', 'zsh']));
    expect(complete('rebaseline', 'A:B', '--reason', '')).toEqual([]);
  });

  describe('the CLI process', () => {
    const run = (...args: string[]) =>
      spawnSync(join(REPO, 'tools/defenderctl/defenderctl'), args, {
        env: { PATH: process.env['PATH'] ?? '' },
        encoding: 'utf8',
        timeout: 60_000,
      });

    it.each(
      [
        ['--help'],
        ['-h'],
        ['help'],
        ...names.map((n) => [n, '--help']),
        ...names.map((n) => ['help', n]),
      ].map((a) => [a]),
    )('%j prints usage and exits 0', (args) => {
      const r = run(...args);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^Usage: defenderctl/);
    });

    it("an option of another command is an error naming the command's options, exit 2", () => {
      const r = run('status', '--defender', '3');
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(
        /unknown option --defender for status \(its options: none of its own; global: /,
      );
      expect(r.stderr).toContain('Usage: defenderctl status');
    });

    it.each(SHELLS)('completion %s prints the generated script', (shell) => {
      const r = run('completion', shell);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(completionScript(shell));
    });
  });
});
