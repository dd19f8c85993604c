import { readJson, readNxJson, readProjectConfiguration, Tree, updateNxJson } from '@nx/devkit';
import { createTreeWithEmptyWorkspace } from '@nx/devkit/testing';
import { libGenerator, LibGeneratorError } from './generator';

describe('lib generator', () => {
  let tree: Tree;

  beforeEach(() => {
    tree = createTreeWithEmptyWorkspace();
    tree.write('tsconfig.base.json', JSON.stringify({ compilerOptions: { paths: { '@defender/zeta': ['./libs/zeta/src/index.ts'] } } }));
  });

  it('adds a domain lib the house way', async () => {
    await libGenerator(tree, { name: 'chamber-weights', description: 'Chamber weights from observed runs.' });

    const project = readProjectConfiguration(tree, 'chamber-weights');
    expect(project.root).toBe('libs/chamber-weights');
    expect(project.tags).toEqual(['type:domain']);
    // lint and test are inferred from eslint.config.mjs and jest.config.ts (no executors, which Nx 24 removes).
    expect(Object.keys(project.targets ?? {})).toEqual(['typecheck']);
    expect(tree.read('libs/chamber-weights/project.json', 'utf8')).not.toMatch(/@nx\/(jest:jest|eslint:lint)/);

    for (const f of ['README.md', 'jest.config.ts', 'tsconfig.json', 'tsconfig.lib.json', 'tsconfig.spec.json', 'src/index.ts']) {
      expect(tree.exists(`libs/chamber-weights/${f}`)).toBe(true);
    }
    expect(tree.read('libs/chamber-weights/src/lib/chamber-weights.ts', 'utf8')).toContain('export class ChamberWeightsError extends Error');
    expect(tree.read('libs/chamber-weights/README.md', 'utf8')).toContain('Chamber weights from observed runs.');
    const jest = tree.read('libs/chamber-weights/jest.config.ts', 'utf8') ?? '';
    expect(jest).toContain("displayName: 'chamber-weights'");
    expect(jest).not.toContain('globalSetup');

    const paths = readJson(tree, 'tsconfig.base.json').compilerOptions.paths;
    expect(Object.keys(paths)).toEqual(['@defender/chamber-weights', '@defender/zeta']);
    expect(paths['@defender/chamber-weights']).toEqual(['./libs/chamber-weights/src/index.ts']);
  });

  it('registers the plugins that infer lint and test, once', async () => {
    await libGenerator(tree, { name: 'chamber-weights' });
    await libGenerator(tree, { name: 'alarm-sink', type: 'infra' });
    expect(readNxJson(tree)?.plugins).toEqual([
      { plugin: '@nx/eslint/plugin', options: { targetName: 'lint' } },
      { plugin: '@nx/jest/plugin', options: { targetName: 'test' } },
    ]);
  });

  it('keeps the plugins nx.json already lists as they are', async () => {
    const jest = { plugin: '@nx/jest/plugin', options: { targetName: 'test', ciTargetName: 'test-ci' } };
    updateNxJson(tree, { ...readNxJson(tree), plugins: [jest] });
    await libGenerator(tree, { name: 'chamber-weights' });
    expect(readNxJson(tree)?.plugins).toEqual([jest, { plugin: '@nx/eslint/plugin', options: { targetName: 'lint' } }]);
  });

  it('wires the real-server harness for an infra lib that asks for it', async () => {
    await libGenerator(tree, { name: 'alarm-sink', type: 'infra', infra: 'nats, cassandra' });
    expect(readProjectConfiguration(tree, 'alarm-sink').tags).toEqual(['type:infra']);
    const jest = tree.read('libs/alarm-sink/jest.config.ts', 'utf8') ?? '';
    expect(jest).toContain("globals: { infra: ['nats', 'cassandra'] }");
    expect(jest).toContain('tools/infra/src/jest/global-setup.ts');
  });

  it.each([
    [{ name: 'BadName' }, /kebab-case/],
    [{ name: 'x', type: 'infra' as const, infra: 'redis' }, /unknown server\(s\) for --infra: redis/],
    [{ name: 'y', infra: 'nats' }, /domain lib is pure/],
  ])('refuses %j', async (opts, message) => {
    await expect(libGenerator(tree, opts)).rejects.toThrow(message);
    await expect(libGenerator(tree, opts)).rejects.toBeInstanceOf(LibGeneratorError);
  });

  it('refuses to overwrite an existing lib', async () => {
    await libGenerator(tree, { name: 'store-x', type: 'infra' });
    await expect(libGenerator(tree, { name: 'store-x', type: 'infra' })).rejects.toThrow('libs/store-x already exists');
  });
});
