import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseCli } from '@defender/fab-sim';
import { runLengthArgs } from './lib/run-length';

const REPO = join(__dirname, '..', '..', '..');

/** `--runs` -> `80`: each option's default as `--help` states it (`(default 80)`, `; default small`). */
function helpDefaults(help: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of help.split('\n')) {
    const m = /^\s+(--[a-z-]+)\b.*?\bdefault (\w+)/.exec(line);
    if (m) out.set(m[1] as string, m[2] as string);
  }
  return out;
}

/** Each option's default in docs/local-fab.md's option table (the first word of its default cell). */
function docsDefaults(markdown: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of markdown.split('\n')) {
    const m = /^\| `(--[a-z-]+)[^|]*?(?:\\\|[^|]*?)*\| ([^|]+?) \|/.exec(line);
    if (m) out.set(m[1] as string, (m[2] as string).split(' ')[0] as string);
  }
  return out;
}

/** Issue 52, item 5: docs/local-fab.md said `--runs` defaulted to 50 while `--help` said 80; the default run is now short (`--full`: the simulator's). */
describe("the local fab's documented defaults", () => {
  const help = spawnSync(process.execPath, ['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, 'tools/local-fab/src/main.ts'), '--help'], { encoding: 'utf8', timeout: 60_000 });
  const fromHelp = helpDefaults(help.stdout);
  const fromDocs = docsDefaults(readFileSync(join(REPO, 'docs/local-fab.md'), 'utf8'));

  it('docs/local-fab.md states the defaults --help states', () => {
    expect(help.status).toBe(0);
    const both = [...fromDocs.keys()].filter((k) => fromHelp.has(k));
    expect(both).toEqual(expect.arrayContaining(['--defenders', '--controllers', '--size', '--speed', '--runs', '--seed', '--port']));
    expect(Object.fromEntries(both.map((k) => [k, fromDocs.get(k)]))).toEqual(Object.fromEntries(both.map((k) => [k, fromHelp.get(k)])));
  });

  it('--help states the run the simulator is given: the short run by default, the simulator\'s own defaults with --full', () => {
    const given = (args: string[], name: string) => args[args.indexOf(name) + 1];
    const short = runLengthArgs({});
    expect({ '--runs': given(short, '--runs'), '--speed': given(short, '--speed') }).toEqual({ '--runs': fromHelp.get('--runs'), '--speed': fromHelp.get('--speed') });
    // --full passes neither on: the simulator's defaults apply, and --help and the docs name them.
    expect(runLengthArgs({ full: true })).toEqual([]);
    const o = parseCli(['run'], {});
    expect(help.stdout).toContain(`(default ${fromHelp.get('--runs')}; ${o.runs} with --full)`);
    expect(help.stdout).toContain(`(default ${fromHelp.get('--speed')}; ${o.speed} with --full)`);
    expect(String(o.seed)).toBe(fromHelp.get('--seed'));
    const docs = readFileSync(join(REPO, 'docs/local-fab.md'), 'utf8');
    expect(docs).toContain(`| \`--runs N\` | ${fromHelp.get('--runs')} (${o.runs} with \`--full\`) |`);
    expect(docs).toContain(`| \`--speed X\\|max\` | ${fromHelp.get('--speed')} (${o.speed} with \`--full\`) |`);
  });
});
