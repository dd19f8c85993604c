/**
 * Writes `apps/<app>/.env.example` for every app from its config schema (tools/deploy-check/src/lib/env-example.ts).
 *
 *   npm run env-example            write the files
 *   npm run env-example -- --check exit 1 when a file is missing or out of date (writes nothing)
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadAppEnvSpecs } from './lib/app-env';
import { envDocs, envExamplePath, envSourceFiles, renderEnvExample } from './lib/env-example';
import { listApps, REPO } from './lib/repo';

const USAGE = `Usage: npm run env-example [-- --check]

Writes apps/<app>/.env.example for every app from its config schema: each variable it reads, its
description (the doc comment on the schema field), its default or that it is required.

  --check     write nothing; exit 1 when a file is missing or differs from the schema
  -h, --help  this text
`;

/** Every app's generated file: path (relative to the workspace) and content. */
export function envExamples(): { path: string; content: string }[] {
  const roots = new Map(listApps().map((a) => [a.name, a.root]));
  return loadAppEnvSpecs().map((spec) => {
    const root = roots.get(spec.app) ?? join('apps', spec.app);
    return { path: envExamplePath(root), content: renderEnvExample(spec, envDocs(envSourceFiles(root)), root) };
  });
}

function main(argv: string[]): number {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, strict: true, allowPositionals: false, options: { check: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (err) {
    process.stderr.write(`env-example: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let stale = 0;
  for (const { path, content } of envExamples()) {
    const file = join(REPO, path);
    const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    if (current === content) continue;
    if (values.check) {
      stale++;
      process.stderr.write(`env-example: ${path} is ${current === undefined ? 'missing' : 'out of date'} (npm run env-example)\n`);
    } else {
      writeFileSync(file, content);
      process.stdout.write(`env-example: wrote ${path}\n`);
    }
  }
  return stale > 0 ? 1 : 0;
}

if (require.main === module) process.exit(main(process.argv.slice(2)));
