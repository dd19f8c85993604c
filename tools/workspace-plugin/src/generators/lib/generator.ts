import { formatFiles, generateFiles, joinPathFragments, names, readNxJson, Tree, updateJson, updateNxJson } from '@nx/devkit';
import { LibGeneratorSchema } from './schema';

const SERVERS = new Set(['nats', 'cassandra']);

/**
 * The plugins that give every project its `lint` and `test` targets from its ESLint and Jest configs
 * (the `@nx/eslint:lint` and `@nx/jest:jest` executors are gone in Nx 24). Their settings for this
 * workspace (inputs, never-cached tests) are nx.json's `targetDefaults`.
 */
const INFERRED_TARGET_PLUGINS = [
  { plugin: '@nx/eslint/plugin', options: { targetName: 'lint' } },
  { plugin: '@nx/jest/plugin', options: { targetName: 'test' } },
] as const;

/** Thrown for options the generator refuses (bad name, unknown server, existing lib). */
export class LibGeneratorError extends Error {
  override readonly name = 'LibGeneratorError';
}

/**
 * `nx g @defender/workspace-plugin:lib <name> --type=domain|infra|nest [--infra=nats,cassandra]`
 *
 * Adds `libs/<name>` with the house layout: project.json (tag `type:<type>`, a `typecheck` target;
 * `lint` and `test` are inferred from the ESLint and Jest configs by the plugins in nx.json, which it
 * registers when missing), tsconfig files, a Jest config (with the real-server harness when `--infra`
 * is given), a README, one public entry `src/index.ts`, a first spec, and the `@defender/<name>` path alias.
 */
export async function libGenerator(tree: Tree, options: LibGeneratorSchema): Promise<void> {
  const name = options.name;
  if (!/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/.test(name)) {
    throw new LibGeneratorError(`library name "${name}" must be kebab-case (e.g. "chamber-weights")`);
  }
  const type = options.type ?? 'domain';
  const root = `libs/${name}`;
  if (tree.exists(root)) throw new LibGeneratorError(`${root} already exists`);
  const infra = (options.infra ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const unknown = infra.filter((s) => !SERVERS.has(s));
  if (unknown.length > 0) {
    throw new LibGeneratorError(`unknown server(s) for --infra: ${unknown.join(', ')} (known: ${[...SERVERS].join(', ')})`);
  }
  if (type === 'domain' && infra.length > 0) {
    throw new LibGeneratorError('a domain lib is pure: its tests must not need servers (use --type=infra)');
  }

  const n = names(name);
  generateFiles(tree, joinPathFragments(__dirname, 'files'), root, {
    tmpl: '',
    name,
    className: n.className,
    propertyName: n.propertyName,
    type,
    infra,
    description: options.description?.trim() || `TODO: one sentence on what @defender/${name} is for.`,
  });

  updateJson(tree, 'tsconfig.base.json', (json) => {
    const paths: Record<string, string[]> = json.compilerOptions.paths ?? {};
    // Relative to this file: TypeScript 6 resolves paths without a baseUrl (deprecated), and only ./-relative ones.
    paths[`@defender/${name}`] = [`./${root}/src/index.ts`];
    json.compilerOptions.paths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
    return json;
  });

  registerInferredTargetPlugins(tree);

  await formatFiles(tree);
}

/** Adds the plugins of {@link INFERRED_TARGET_PLUGINS} that nx.json does not list yet (by plugin name). */
function registerInferredTargetPlugins(tree: Tree): void {
  const nxJson = readNxJson(tree) ?? {};
  const plugins = nxJson.plugins ?? [];
  const listed = new Set(plugins.map((p) => (typeof p === 'string' ? p : p.plugin)));
  const missing = INFERRED_TARGET_PLUGINS.filter((p) => !listed.has(p.plugin));
  if (missing.length === 0) return;
  nxJson.plugins = [...plugins, ...missing.map((p) => ({ plugin: p.plugin, options: { ...p.options } }))];
  updateNxJson(tree, nxJson);
}

export default libGenerator;
