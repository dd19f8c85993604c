import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAppEnvSpecs, type AppEnvSpec } from './lib/app-env';
import { renderEnvExample } from './lib/env-example';
import { REPO } from './lib/repo';
import { envExamples } from './write-env-examples';

/** The generated `.env.example` of every app, against its config schema (so it never drifts). */

describe('.env.example', () => {
  const generated = envExamples();

  it.each(generated.map((g) => [g.path, g]))('%s is what `npm run env-example` writes from the schema', (_path, g) => {
    const file = join(REPO, g.path);
    expect(existsSync(file)).toBe(true);
    // Fails after a config change until `npm run env-example` is run and its output committed.
    expect(readFileSync(file, 'utf8')).toBe(g.content);
  });

  it('renders the description, the default or "required", and a line per variable', () => {
    const spec: AppEnvSpec = {
      app: 'demo',
      schema: { shape: {} },
      keys: new Set(['NATS_SERVERS', 'SECRET', 'POD_NAME', 'HTTP_PORT']),
      required: new Set(['SECRET']),
      defaults: new Map<string, unknown>([
        ['NATS_SERVERS', ['nats://a:4222', 'nats://b:4222']],
        ['HTTP_PORT', 8080],
      ]),
    };
    const docs = new Map([
      ['NATS_SERVERS', { text: 'Comma-separated NATS URLs.' }],
      ['SECRET', { text: 'A token nobody should commit.' }],
    ]);
    expect(renderEnvExample(spec, docs, 'apps/demo').split('\n').slice(3)).toEqual([
      '',
      '# Comma-separated NATS URLs.',
      '# NATS_SERVERS=nats://a:4222,nats://b:4222',
      '',
      '# A token nobody should commit.',
      '# required',
      'SECRET=',
      '',
      '# optional, no default',
      '# POD_NAME=',
      '',
      '# HTTP_PORT=8080',
      '',
    ]);
  });

  it('each file has one line per variable the app reads, in the schema\'s order', () => {
    const specs = loadAppEnvSpecs();
    expect(generated).toHaveLength(specs.length);
    specs.forEach((spec, i) => {
      const names = [...(generated[i]?.content ?? '').matchAll(/^#? ?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]);
      expect(names).toEqual([...spec.keys]);
    });
  });

  it('the command: --help exits 0 at once, an unknown option is a usage error, --check passes on the committed files', () => {
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, 'tools/deploy-check/src/write-env-examples.ts'), ...args], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
    const help = run('--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm run env-example/);
    const bad = run('--bogus');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/Unknown option '--bogus'/);
    const check = run('--check');
    expect([check.status, check.stderr]).toEqual([0, '']);
  });
});
