/**
 * Type-checks the whole workspace in a few TypeScript programs instead of one or two per project.
 *
 * Every project's `typecheck` target runs `tsc -p <tsconfig> --noEmit` for its tsconfig files; since
 * the `@defender/*` aliases point at sources, each of those programs checks again every lib the
 * project imports (59 programs, about 5 s of CPU each, ~300 s in all on the 2-core machine). This
 * checks the same files with the same compiler options once: the tsconfig files are the ones the
 * targets name, grouped by their compiler options, one program per group (three in this workspace).
 *
 *   node -r ./tools/scripts/register.js tools/scripts/typecheck-all.ts   (npm run typecheck)
 *
 * Exit code 0: no errors; 1: type errors (printed as tsc prints them); 2: a target's command names
 * no tsconfig or a tsconfig that does not parse.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const REPO = join(__dirname, '..', '..');

/** A project's typecheck target that names no tsconfig, or a tsconfig that does not parse. */
export class TypecheckConfigError extends Error {
  override readonly name = 'TypecheckConfigError';
}

/** The `tsc -p <file>` paths of a typecheck command, in order. */
export function tsconfigsOfCommand(command: string): string[] {
  return [...command.matchAll(/\btsc\s+(?:[^&|;]*?\s)?-p\s+(\S+)/g)].map((m) => m[1]).filter((c): c is string => c !== undefined);
}

/** Every project's typecheck tsconfig files (repo-relative), from apps/*, libs/*, tools/* project.json. */
export function typecheckConfigs(repo = REPO): string[] {
  const out: string[] = [];
  for (const area of ['apps', 'libs', 'tools']) {
    for (const name of readdirSync(join(repo, area)).sort()) {
      const file = join(repo, area, name, 'project.json');
      if (!existsSync(file)) continue;
      const target = (JSON.parse(readFileSync(file, 'utf8')) as { targets?: Record<string, { options?: { command?: string } }> }).targets?.['typecheck'];
      if (!target) continue;
      const command = target.options?.command ?? '';
      const configs = tsconfigsOfCommand(command);
      if (configs.length === 0) throw new TypecheckConfigError(`${relative(repo, file)}: the typecheck command names no tsconfig (${JSON.stringify(command)})`);
      out.push(...configs);
    }
  }
  return out;
}

/** Options that do not change what a check finds (where output would go, which file set them). */
const NOT_CHECKING = new Set(['configFilePath', 'outDir', 'noEmit', 'tsBuildInfoFile', 'declarationDir']);

/** The key two configs share when their files can be checked in one program. */
export function optionsKey(options: ts.CompilerOptions): string {
  const kept = Object.entries(options)
    .filter(([k]) => !NOT_CHECKING.has(k))
    // ["jest", "node"] and ["node", "jest"] load the same type packages.
    .map(([k, v]) => [k, k === 'types' && Array.isArray(v) ? [...(v as string[])].sort() : v] as const)
    .sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify(kept);
}

interface Group {
  readonly options: ts.CompilerOptions;
  readonly configs: string[];
  readonly files: Set<string>;
}

function parse(config: string, repo: string): ts.ParsedCommandLine {
  const host: ts.ParseConfigFileHost = {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new TypecheckConfigError(`${config}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    },
  };
  const parsed = ts.getParsedCommandLineOfConfigFile(join(repo, config), undefined, host);
  if (!parsed) throw new TypecheckConfigError(`${config}: does not parse`);
  if (parsed.errors.length > 0) {
    throw new TypecheckConfigError(`${config}: ${parsed.errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ')}`);
  }
  return parsed;
}

/** Groups the configs by their checking options. */
export function groupConfigs(configs: readonly string[], repo = REPO): Group[] {
  const groups = new Map<string, Group>();
  for (const config of configs) {
    const parsed = parse(config, repo);
    const key = optionsKey(parsed.options);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { options: { ...parsed.options, noEmit: true }, configs: [], files: new Set() }));
    g.configs.push(config);
    for (const f of parsed.fileNames) g.files.add(f);
  }
  return [...groups.values()];
}

/** Checks each group in one program; returns the diagnostics, formatted as tsc formats them. */
export function checkGroups(groups: readonly Group[], repo = REPO): { errors: number; text: string; summary: string[] } {
  const host: ts.FormatDiagnosticsHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => repo, getNewLine: () => '\n' };
  let errors = 0;
  let text = '';
  const summary: string[] = [];
  for (const g of groups) {
    const started = performance.now();
    const program = ts.createProgram({ rootNames: [...g.files].sort(), options: g.options });
    const diagnostics = ts.getPreEmitDiagnostics(program);
    const found = diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error).length;
    errors += found;
    if (diagnostics.length > 0) text += ts.formatDiagnostics(diagnostics, host);
    summary.push(`${g.files.size} files of ${g.configs.length} tsconfigs in ${((performance.now() - started) / 1000).toFixed(1)} s: ${found} errors`);
  }
  return { errors, text, summary };
}

function main(): number {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write('Usage: npm run typecheck\n\nType-checks every project (the tsconfig files of their typecheck targets) in one program per\nset of compiler options. Exit 0: clean, 1: type errors, 2: a bad target or tsconfig.\n');
    return 0;
  }
  let groups: Group[];
  try {
    groups = groupConfigs(typecheckConfigs());
  } catch (err) {
    if (!(err instanceof TypecheckConfigError)) throw err;
    process.stderr.write(`typecheck: ${err.message}\n`);
    return 2;
  }
  const { errors, text, summary } = checkGroups(groups);
  process.stdout.write(text);
  for (const line of summary) process.stdout.write(`typecheck: ${line}\n`);
  return errors > 0 ? 1 : 0;
}

if (require.main === module) process.exit(main());
