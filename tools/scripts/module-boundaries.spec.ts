import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const REPO = join(__dirname, '..', '..');

/**
 * The layer rules of eslint.config.mjs are real: these imports, placed in a file of the given
 * project, must be rejected (or accepted) by `@nx/enforce-module-boundaries`.
 */

/**
 * Lints each (file, code) pair with the workspace's ESLint config in a child process (ESLint loads
 * the flat config with a dynamic import, which Jest's module sandbox does not allow) and returns
 * the enforce-module-boundaries messages per pair.
 */
function lintBoundaries(cases: [string, string][]): string[][] {
  const script = `
    import { ESLint } from 'eslint';
    const cases = JSON.parse(process.env.CASES);
    const eslint = new ESLint({ cwd: process.cwd() });
    const out = [];
    for (const [file, code] of cases) {
      const [r] = await eslint.lintText(code, { filePath: file });
      out.push(r.messages.filter((m) => m.ruleId === '@nx/enforce-module-boundaries').map((m) => m.message));
    }
    process.stdout.write(JSON.stringify(out));`;
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: REPO,
    env: { ...process.env, CASES: JSON.stringify(cases.map(([f, c]) => [join(REPO, f), c])) },
    encoding: 'utf8',
  });
  return JSON.parse(stdout) as string[][];
}

describe('module boundaries (lint)', () => {
  const rejected: [string, string, RegExp][] = [
    ['libs/hashing/src/lib/probe.ts', "import '@nestjs/common';", /type:domain" is not allowed to import "@nestjs\/common"/],
    ['libs/hashing/src/lib/probe.ts', "import '@nats-io/kv';", /type:domain" is not allowed to import "@nats-io\/kv"/],
    ['libs/hashing/src/lib/probe.ts', "import 'cassandra-driver';", /type:domain" is not allowed to import "cassandra-driver"/],
    ['libs/hashing/src/lib/probe.ts', "import '@grpc/grpc-js';", /type:domain" is not allowed to import "@grpc\/grpc-js"/],
    // A domain lib no nest lib reaches, even through test files (nest-common's tests use the harness,
    // which uses hashing's seededRandom): otherwise the rule reports the cycle instead of the layer.
    ['libs/assignment/src/lib/probe.ts', "import '@defender/nest-common';", /type:domain" can only depend on libs tagged with "type:domain"/],
    ['libs/nest-common/src/lib/probe.ts', "import '@defender/infra-harness';", /type:nest" can only depend on libs tagged/],
    ['apps/defender/src/app/probe.ts', "import '@defender/infra-harness';", /type:app" can only depend on libs tagged/],
    ['apps/defender/src/app/probe.ts', "import '../../../election-agent/src/app/config';", /Projects cannot be imported by a relative or absolute path/],
  ];
  const allowed: [string, string][] = [
    ['apps/defender/src/app/probe.ts', "import { HealthRegistry } from '@defender/nest-common';\nexport const x = HealthRegistry;\n"],
    ['apps/defender/src/app/probe.spec.ts', "import { startNatsServer } from '@defender/infra-harness';\nexport const x = startNatsServer;\n"],
    ['tools/scripts/probe.ts', "import { HealthRegistry } from '@defender/nest-common';\nexport const x = HealthRegistry;\n"],
  ];
  let results: string[][] = [];

  beforeAll(() => {
    results = lintBoundaries([...rejected.map(([f, c]) => [f, `${c}\n`] as [string, string]), ...allowed]);
  });

  it.each(rejected.map((r, i) => [...r, i] as const))('%s: %s is rejected', (_file, _code, message, i) => {
    expect(results[i]).toEqual(expect.arrayContaining([expect.stringMatching(message)]));
  });

  it.each(allowed.map((a, i) => [...a, rejected.length + i] as const))('%s: allowed import passes', (_file, _code, i) => {
    expect(results[i]).toEqual([]);
  });
});
