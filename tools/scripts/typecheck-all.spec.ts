import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkGroups, groupConfigs, optionsKey, tsconfigsOfCommand, TypecheckConfigError, typecheckConfigs } from './typecheck-all';

describe('tsconfigsOfCommand', () => {
  it.each([
    ['tsc -p libs/a/tsconfig.lib.json --noEmit && tsc -p libs/a/tsconfig.spec.json --noEmit', ['libs/a/tsconfig.lib.json', 'libs/a/tsconfig.spec.json']],
    ['tsc --noEmit -p tools/b/tsconfig.json', ['tools/b/tsconfig.json']],
    ['echo nothing', []],
  ])('%s', (command, configs) => expect(tsconfigsOfCommand(command)).toEqual(configs));
});

describe('optionsKey', () => {
  it('ignores where output goes and the order of types, not what is checked', () => {
    expect(optionsKey({ outDir: '/a', types: ['jest', 'node'], strict: true })).toBe(optionsKey({ outDir: '/b', types: ['node', 'jest'], strict: true }));
    expect(optionsKey({ types: ['node'] })).not.toBe(optionsKey({ types: ['node', 'jest'] }));
    expect(optionsKey({ strict: true })).not.toBe(optionsKey({ strict: false }));
  });
});

describe('the workspace', () => {
  it('every project with a typecheck target names its tsconfig files', () => {
    const configs = typecheckConfigs();
    expect(configs).toContain('apps/defender/tsconfig.app.json');
    expect(configs).toContain('apps/defender/tsconfig.spec.json');
    expect(configs).toContain('libs/uchart/tsconfig.lib.json');
    expect(new Set(configs).size).toBe(configs.length);
  });
});

describe('groupConfigs and checkGroups (a throwaway workspace)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'typecheck-all-'));
    writeFileSync(join(dir, 'tsconfig.base.json'), JSON.stringify({ compilerOptions: { rootDir: '.', strict: true, target: 'es2022', module: 'commonjs', types: [], skipLibCheck: true } }));
    for (const p of ['a', 'b']) {
      mkdirSync(join(dir, p, 'src'), { recursive: true });
      writeFileSync(join(dir, p, 'tsconfig.lib.json'), JSON.stringify({ extends: '../tsconfig.base.json', compilerOptions: { outDir: `../dist/${p}` }, include: ['src/**/*.ts'] }));
    }
    mkdirSync(join(dir, 'c', 'src'), { recursive: true });
    writeFileSync(join(dir, 'c', 'tsconfig.lib.json'), JSON.stringify({ extends: '../tsconfig.base.json', compilerOptions: { strict: false }, include: ['src/**/*.ts'] }));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('checks configs with the same options in one program and finds an error in any of them', () => {
    writeFileSync(join(dir, 'a', 'src', 'ok.ts'), 'export const n: number = 1;\n');
    writeFileSync(join(dir, 'b', 'src', 'bad.ts'), "export const n: number = 'one';\n");
    writeFileSync(join(dir, 'c', 'src', 'loose.ts'), 'export function f(x) { return x; }\n');
    const groups = groupConfigs(['a/tsconfig.lib.json', 'b/tsconfig.lib.json', 'c/tsconfig.lib.json'], dir);
    expect(groups.map((g) => g.configs)).toEqual([['a/tsconfig.lib.json', 'b/tsconfig.lib.json'], ['c/tsconfig.lib.json']]);
    const r = checkGroups(groups, dir);
    expect(r.text).not.toMatch(/loose\.ts/);
    expect(r.errors).toBe(1);
    expect(r.text).toMatch(/b\/src\/bad\.ts.*TS2322/);
    expect(r.summary).toHaveLength(2);
  });

  it('a tsconfig that does not parse is a TypecheckConfigError naming it', () => {
    writeFileSync(join(dir, 'a', 'tsconfig.lib.json'), '{ "extends": "../missing.json" }');
    expect(() => groupConfigs(['a/tsconfig.lib.json'], dir)).toThrow(TypecheckConfigError);
    expect(() => groupConfigs(['a/tsconfig.lib.json'], dir)).toThrow(/a\/tsconfig\.lib\.json/);
  });
});
