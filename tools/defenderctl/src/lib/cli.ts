/**
 * defenderctl's command line: one table of commands and their options, from which the parser, every
 * help text and the shell completion scripts are derived (so none of them can drift from the others).
 */
import { parseArgs } from 'node:util';

/** One option, in `node:util` parseArgs terms plus what the help shows. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** Placeholder of the value in help texts (`URL`, `N`); string options only. */
  readonly value?: string;
  /** Shown without brackets in the synopsis; the command checks it (parseArgs has no required options). */
  readonly required?: boolean;
  readonly help: string;
}

export type OptionTable = Readonly<Record<string, OptionSpec>>;

/** One command: its own options (the global ones are accepted everywhere) and its arguments. */
export interface CommandSpec {
  readonly name: string;
  /** Argument synopsis, e.g. `<tool:chamber>`. */
  readonly args: string;
  /** How many positional arguments it takes after its name. */
  readonly positionals: { readonly min: number; readonly max: number };
  /** Fixed words its first argument may be (completion offers them). */
  readonly choices?: readonly string[];
  readonly summary: string;
  /** More lines for `defenderctl help <command>`. */
  readonly details?: string;
  readonly options: OptionTable;
}

/** Options every command takes, before or after the command's name. */
export const GLOBAL_OPTIONS: OptionTable = {
  json: { type: 'boolean', help: 'machine-readable output (alarms tail: one JSON object per line)' },
  nats: {
    type: 'string',
    value: 'URL',
    help: 'NATS server(s), comma-separated (else the local fab, else NATS_SERVERS)',
  },
  controller: {
    type: 'string',
    value: 'URL,...',
    help: "the controllers' HTTP base URLs (else the local fab, else CONTROLLER_URLS)",
  },
  store: {
    type: 'string',
    value: 'sqlite:FILE|cassandra:HOSTS',
    help: 'the store (else the local fab, else STORE_BACKEND and its variables)',
  },
  help: { type: 'boolean', short: 'h', help: 'this text' },
};

const COMMAND_NAMES = [
  'status',
  'assignments',
  'explain',
  'alarms',
  'drain',
  'rebaseline',
  'event',
  'strategy',
  'completion',
  'help',
] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

export const COMMANDS: Readonly<Record<CommandName, CommandSpec>> = {
  status: {
    name: 'status',
    args: '',
    positionals: { min: 0, max: 0 },
    summary: 'leader, trigger state, map, defenders (state, chambers, weight vs average)',
    options: {},
  },
  assignments: {
    name: 'assignments',
    args: '',
    positionals: { min: 0, max: 0 },
    summary: 'chambers and their owners (weights from the store)',
    options: {
      defender: { type: 'string', value: 'N', help: 'only the chambers of this defender (defender-N or N)' },
    },
  },
  explain: {
    name: 'explain',
    args: '<tool:chamber>',
    positionals: { min: 1, max: 1 },
    summary: 'owner, weight, why it is there, its moves in the kept map versions',
    details: 'Exit code 1 when the chamber is in no map.',
    options: {},
  },
  alarms: {
    name: 'alarms',
    args: 'tail',
    positionals: { min: 1, max: 1 },
    choices: ['tail'],
    summary: 'the last N alarms, oldest first; -f follows new ones until Ctrl-C',
    options: {
      n: {
        type: 'string',
        short: 'n',
        value: 'N',
        help: 'how many of the last alarms (0..100000, default 20)',
      },
      follow: { type: 'boolean', short: 'f', help: 'keep printing new alarms until Ctrl-C' },
      holds: { type: 'boolean', help: 'holds too, not only alarms' },
      chamber: { type: 'string', value: 'KEY', help: 'only this chamber (tool:chamber)' },
    },
  },
  drain: {
    name: 'drain',
    args: '<defender>',
    positionals: { min: 1, max: 1 },
    summary: 'graceful leave of a local-fab defender (SIGTERM), waits for the new map',
    details: 'Elsewhere it prints the `kubectl delete pod` to use.',
    options: {
      timeout: {
        type: 'string',
        value: 'SECONDS',
        help: 'how long to wait for the map without it (default 90)',
      },
    },
  },
  rebaseline: {
    name: 'rebaseline',
    args: '<tool:chamber>',
    positionals: { min: 1, max: 1 },
    summary: 'new Phase I from the next run for every chart of the chamber (or recipe) and its monitor',
    details: "Excluded runs never enter the new Phase I. Needs the store only (--store, or the local fab's).",
    options: {
      reason: {
        type: 'string',
        value: 'TEXT',
        required: true,
        help: 'why (required; recorded with the new limits)',
      },
      recipe: { type: 'string', value: 'R', help: "only this recipe's charts" },
      exclude: { type: 'string', value: 'RUN,...', help: 'runs that never enter the new Phase I' },
      'min-runs': {
        type: 'string',
        value: 'N',
        help: "runs of the new Phase I (2..500; default: the strategy's)",
      },
    },
  },
  event: {
    name: 'event',
    args: '<tool:chamber> <kind>',
    positionals: { min: 2, max: 2 },
    choices: ['pm', 'clean', 'part-change', 'seasoning', 'recipe-change', 'long-idle', 'note'],
    summary: 'publish an equipment event (a PM, a clean, a part change, ...) into the chamber\'s stream',
    details: [
      'The chamber applies it before its next run (what its strategy does with the kind: a new Phase I after a PM,',
      '  by default). Published as the equipment side (the local fab\'s publisher, else NATS_PUBLISHER_USER /',
      '  NATS_PUBLISHER_PASSWORD): no other role may. The same --id twice is one event.',
      'part-change needs --parts, recipe-change --recipe, long-idle --idle-seconds, note --note.',
    ].join('\n'),
    options: {
      id: { type: 'string', value: 'ID', help: 'the event id (default: <kind>-<time>); the same id again is the same event' },
      at: { type: 'string', value: 'ISO-TIME', help: 'when it happened on the tool (default: now)' },
      note: { type: 'string', value: 'TEXT', help: 'what happened, shown with the event (required for note)' },
      parts: { type: 'string', value: 'PART,...', help: 'part-change: the parts changed' },
      recipe: { type: 'string', value: 'R', help: 'only this recipe (required for recipe-change)' },
      'idle-seconds': { type: 'string', value: 'N', help: 'long-idle: how long the chamber stood idle' },
      author: { type: 'string', value: 'NAME', help: 'who reports it (default $USER)' },
    },
  },
  strategy: {
    name: 'strategy',
    args: 'put|show [<tool:chamber>]',
    positionals: { min: 1, max: 2 },
    choices: ['put', 'show'],
    summary: 'store a defense strategy under a scope (put), or show which scope judges a chamber (show)',
    details: [
      'put --scope SCOPE --file DOC.json [--author NAME]: validates the document (schema, and its own scope against',
      '  SCOPE), then stores it as the next version of SCOPE; an invalid or oversized one is refused, every issue listed.',
      '  SCOPE: default, recipe/<r>, chamber/<tool>:<chamber> or chamber/<tool>:<chamber>/recipe/<r>.',
      'show <tool:chamber> [--recipe R]: the lookup order of its runs, what each scope holds and which one wins',
      '  (exit code 1 when the winner is unusable: its runs are dead-lettered invalid-strategy).',
      "Needs the store only (--store, or the local fab's).",
    ].join('\n'),
    options: {
      scope: { type: 'string', value: 'SCOPE', help: 'put: where the strategy applies (see above)' },
      file: { type: 'string', value: 'DOC.json', help: 'put: the strategy document (JSON, at most 1 MiB)' },
      author: { type: 'string', value: 'NAME', help: 'put: recorded with the version (default $USER)' },
      recipe: { type: 'string', value: 'R', help: 'show: runs of this recipe (adds its recipe scopes)' },
    },
  },
  completion: {
    name: 'completion',
    args: 'bash|zsh',
    positionals: { min: 1, max: 1 },
    choices: ['bash', 'zsh'],
    summary: 'print a shell completion script (see tools/defenderctl/README.md to install it)',
    details:
      'bash: source <(defenderctl completion bash)\nzsh:  source <(defenderctl completion zsh)   (after compinit)',
    options: {},
  },
  help: {
    name: 'help',
    args: '[command]',
    positionals: { min: 0, max: 1 },
    choices: COMMAND_NAMES,
    summary: 'this text, or the help of one command',
    options: {},
  },
};

/** A wrong command line: exit code 2 with `help` (the usage of the command it concerns). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly help: string,
  ) {
    super(message);
  }
}

export type Invocation =
  /** Print `text` on stdout and exit with `exitCode` (0, or 2 when no command was given). */
  | { readonly kind: 'help'; readonly text: string; readonly exitCode: number }
  | {
      readonly kind: 'run';
      readonly command: Exclude<CommandName, 'help'>;
      readonly args: readonly string[];
      /** Global and the command's own options; string options as given (the command checks them). */
      readonly values: Readonly<Record<string, string | boolean | undefined>>;
    };

const isCommand = (s: string): s is CommandName => (COMMAND_NAMES as readonly string[]).includes(s);

/** `--name VALUE` / `-n, --name` as the help and the error messages show it. */
function flag(name: string, o: OptionSpec): string {
  const long = name.length === 1 ? `-${name}` : `--${name}`;
  const withShort = o.short && o.short !== name ? `-${o.short}, ${long}` : long;
  return o.value ? `${withShort} ${o.value}` : withShort;
}

/** `  <left><help>`, the help in one column; on its own line when `left` is too wide. */
function row(left: string, help: string): string[] {
  return left.length < 32 ? [`  ${left.padEnd(32)}${help}`] : [`  ${left}`, `  ${''.padEnd(32)}${help}`];
}

function optionLines(table: OptionTable): string[] {
  return Object.entries(table).flatMap(([name, o]) => row(flag(name, o), o.help));
}

function synopsis(c: CommandSpec): string {
  const opts = Object.entries(c.options).map(([name, o]) => {
    const f = flag(name, o).replace(', ', '|');
    return o.required ? f : `[${f}]`;
  });
  return [c.name, c.args, ...opts].filter(Boolean).join(' ');
}

/** The whole usage: every command and the global options. */
export function usage(): string {
  return [
    'Usage: defenderctl [global options] <command> [options]',
    '',
    'Commands:',
    ...Object.values(COMMANDS).flatMap((c) => row(synopsis(c), c.summary)),
    '',
    'Global options (before or after the command):',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    "`defenderctl help <command>` or `defenderctl <command> --help` shows a command's options.",
    'Without --nats/--controller/--store it talks to the running local fab (tmp/local-fab/current.json), else to',
    "the apps' variables: NATS_SERVERS, CONTROLLER_URLS, STORE_BACKEND/SQLITE_PATH/CASSANDRA_*, NATS_KV_*,",
    'ELECTION_KV_BUCKET.',
    'Exit codes: 0 ok, 1 failure, 2 usage.',
  ].join('\n');
}

/** The help of one command: its synopsis, its own options and the global ones. */
export function commandHelp(name: CommandName): string {
  const c = COMMANDS[name];
  const own = Object.keys(c.options).length;
  return [
    `Usage: defenderctl ${synopsis(c)}`,
    '',
    c.summary,
    ...(c.details ? [c.details] : []),
    '',
    ...(own ? ['Options:', ...optionLines(c.options), ''] : []),
    'Global options:',
    ...optionLines(GLOBAL_OPTIONS),
  ].join('\n');
}

function optionList(table: OptionTable): string {
  return Object.entries(table)
    .map(([name, o]) => flag(name, o))
    .join(', ');
}

/** parseArgs' error as one line naming the options that are accepted there; `command` null: before any command. */
function parseFailure(err: unknown, command: string | null, own: OptionTable, help: string): UsageError {
  const code = (err as { code?: string }).code;
  const msg = (err as Error).message;
  const unknown = /Unknown option '([^']+)'/.exec(msg)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) {
    if (command === null)
      return new UsageError(
        `unknown option ${unknown} before the command (global options: ${optionList(GLOBAL_OPTIONS)}; a command's own options go after it)`,
        help,
      );
    const ownList = Object.keys(own).length ? optionList(own) : 'none of its own';
    return new UsageError(
      `unknown option ${unknown} for ${command} (its options: ${ownList}; global: ${optionList(GLOBAL_OPTIONS)})`,
      help,
    );
  }
  return new UsageError(command === null ? msg : `${command}: ${msg}`, help);
}

/**
 * Parses defenderctl's command line (without node and the script): global options, then the command
 * and its arguments with its own options (global options are accepted after it too).
 * @throws UsageError for an unknown command or option, a missing value or a wrong number of arguments.
 */
export function parseCommandLine(argv: readonly string[]): Invocation {
  // Where the command is: the first positional, given what the global options consume.
  const { tokens } = parseArgs({
    args: [...argv],
    options: GLOBAL_OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const at = tokens.find((t) => t.kind === 'positional' || t.kind === 'option-terminator');
  const cmdIndex = at?.kind === 'positional' ? at.index : -1;
  const name = at?.kind === 'positional' ? at.value : '';
  let head;
  try {
    head = parseArgs({
      args: argv.slice(0, cmdIndex < 0 ? argv.length : cmdIndex),
      options: GLOBAL_OPTIONS,
      allowPositionals: false,
      strict: true,
    });
  } catch (err) {
    const ownHelp = isCommand(name) ? commandHelp(name) : usage();
    throw parseFailure(err, null, {}, ownHelp);
  }
  if (cmdIndex < 0) return { kind: 'help', text: usage(), exitCode: head.values.help ? 0 : 2 };
  if (!isCommand(name))
    throw new UsageError(`unknown command "${name}" (one of ${COMMAND_NAMES.join(', ')})`, usage());
  const spec = COMMANDS[name];
  const help = commandHelp(name);
  let rest;
  try {
    rest = parseArgs({
      args: argv.slice(cmdIndex + 1),
      options: { ...GLOBAL_OPTIONS, ...spec.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw parseFailure(err, name, spec.options, help);
  }
  const values = { ...head.values, ...rest.values };
  if (name === 'help') {
    const about = rest.positionals[0];
    if (rest.positionals.length > 1) throw new UsageError('help takes at most one command', help);
    if (about === undefined) return { kind: 'help', text: usage(), exitCode: 0 };
    if (!isCommand(about))
      throw new UsageError(`unknown command "${about}" (one of ${COMMAND_NAMES.join(', ')})`, usage());
    return { kind: 'help', text: commandHelp(about), exitCode: 0 };
  }
  if (values.help) return { kind: 'help', text: help, exitCode: 0 };
  const args = rest.positionals;
  const { min, max } = spec.positionals;
  if (args.length < min || args.length > max) {
    throw new UsageError(
      `${name} takes ${min === max ? (min === 0 ? 'no arguments' : `${min} argument${min > 1 ? 's' : ''}`) : `${min} to ${max} arguments`}${spec.args ? ` (${spec.args})` : ''}`,
      help,
    );
  }
  if (spec.choices && args[0] !== undefined && !spec.choices.includes(args[0])) {
    throw new UsageError(`${name} takes one of: ${spec.choices.join(', ')}`, help);
  }
  return { kind: 'run', command: name, args, values };
}

// ---------------------------------------------------------------------------------------------
// Completion scripts, generated from the same tables.

function words(table: OptionTable): string[] {
  return Object.entries(table).flatMap(([name, o]) => [
    name.length === 1 ? `-${name}` : `--${name}`,
    ...(o.short && o.short !== name ? [`-${o.short}`] : []),
  ]);
}

function valueWords(table: OptionTable): string[] {
  return words(Object.fromEntries(Object.entries(table).filter(([, o]) => o.type === 'string')));
}

function bashCompletion(): string {
  const all = Object.values(COMMANDS);
  const globals = words(GLOBAL_OPTIONS).join(' ');
  const takesValue = [
    ...new Set([...valueWords(GLOBAL_OPTIONS), ...all.flatMap((c) => valueWords(c.options))]),
  ].join('|');
  return `# bash completion for defenderctl; generated by \`defenderctl completion bash\` from its command table.
# Install: source <(tools/defenderctl/defenderctl completion bash)   (e.g. in ~/.bashrc)
_defenderctl() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" cmd="" nargs=0 i
  # The command and how many arguments it has so far; an option's value is neither.
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      ${takesValue}) ((i++)) ;;
      -*) ;;
      *) if [[ -z "$cmd" ]]; then cmd="\${COMP_WORDS[i]}"; else ((nargs++)); fi ;;
    esac
  done
  case "$prev" in
    ${takesValue}) COMPREPLY=(); return 0 ;;
  esac
  local list
  case "$cmd" in
    "") list="${all.map((c) => c.name).join(' ')} ${globals}" ;;
${all
  .map((c) => {
    const own = [...words(c.options), globals].join(' ');
    const choices = c.choices
      ? `if ((nargs == 0)); then list="${c.choices.join(' ')} ${own}"; else list="${own}"; fi`
      : `list="${own}"`;
    return `    ${c.name}) ${choices} ;;`;
  })
  .join('\n')}
    *) list="${globals}" ;;
  esac
  COMPREPLY=($(compgen -W "$list" -- "$cur"))
}
complete -F _defenderctl defenderctl
`;
}

/** Text safe inside a zsh `_arguments` spec's [description] within single quotes. */
function zshDescription(s: string): string {
  return s
    .replace(/[[\]]/g, (c) => (c === '[' ? '(' : ')'))
    .replace(/:/g, '\\:')
    .replace(/'/g, "'\\''");
}

function zshOptionSpecs(table: OptionTable): string[] {
  return Object.entries(table).map(([name, o]) => {
    const long = name.length === 1 ? `-${name}` : `--${name}`;
    const forms = o.short && o.short !== name ? [`-${o.short}`, long] : [long];
    const value = o.type === 'string' ? `:${zshDescription(o.value ?? 'value')}:` : '';
    const head = forms.length > 1 ? `'(${forms.join(' ')})'{${forms.join(',')}}` : '';
    return forms.length > 1
      ? `${head}'[${zshDescription(o.help)}]${value}'`
      : `'${long}[${zshDescription(o.help)}]${value}'`;
  });
}

function zshCompletion(): string {
  const all = Object.values(COMMANDS);
  const globals = zshOptionSpecs(GLOBAL_OPTIONS).join(' ');
  return `#compdef defenderctl
# zsh completion for defenderctl; generated by \`defenderctl completion zsh\` from its command table.
# Install: source <(tools/defenderctl/defenderctl completion zsh)   (after compinit, e.g. in ~/.zshrc)
#      or: tools/defenderctl/defenderctl completion zsh > "\${fpath[1]}/_defenderctl"
_defenderctl() {
  local curcontext="$curcontext" state line
  local -a globals commands
  globals=(${globals})
  commands=(
${all.map((c) => `    '${c.name}:${zshDescription(c.summary)}'`).join('\n')}
  )
  _arguments -C $globals '1:command:->command' '*::arg:->args'
  case $state in
    command) _describe -t commands 'defenderctl command' commands ;;
    args)
      case $line[1] in
${all
  .map((c) => {
    const specs = [...zshOptionSpecs(c.options), '$globals'];
    if (c.positionals.max > 0)
      specs.push(
        c.choices
          ? `'1:${zshDescription(c.args)}:(${c.choices.join(' ')})'`
          : `'1:${zshDescription(c.args)}:'`,
      );
    return `        ${c.name}) _arguments ${specs.join(' ')} ;;`;
  })
  .join('\n')}
      esac
      ;;
  esac
}
if [ "$funcstack[1]" = "_defenderctl" ]; then
  _defenderctl "$@"
else
  compdef _defenderctl defenderctl
fi
`;
}

export const SHELLS = ['bash', 'zsh'] as const;

/** The completion script for `shell`, listing every command and option of the tables above. */
export function completionScript(shell: (typeof SHELLS)[number]): string {
  return shell === 'bash' ? bashCompletion() : zshCompletion();
}
