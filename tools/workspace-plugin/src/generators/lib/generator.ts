import { formatFiles, generateFiles, joinPathFragments, names, Tree, updateJson } from '@nx/devkit';
import { LibGeneratorSchema } from './schema';

const SERVERS = new Set(['nats', 'cassandra']);

/** Thrown for options the generator refuses (bad name, unknown server, existing lib). */
export class LibGeneratorError extends Error {
  override readonly name = 'LibGeneratorError';
}

/**
 * `nx g @defender/workspace-plugin:lib <name> --type=domain|infra|nest [--infra=nats,cassandra]`
 *
 * Adds `libs/<name>` with the house layout: project.json (tag `type:<type>`, lint/test/typecheck
 * targets), tsconfig files, a Jest config (with the real-server harness when `--infra` is given),
 * a README, one public entry `src/index.ts`, a first spec, and the `@defender/<name>` path alias.
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

  await formatFiles(tree);
}

export default libGenerator;
