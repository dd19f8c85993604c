import nx from '@nx/eslint-plugin';

/**
 * Module boundaries (see ../shared/style.md and docs/extending.md):
 *   app    -> nest, infra, domain
 *   nest   -> nest, infra, domain
 *   infra  -> domain
 *   domain -> domain only, and no framework / transport / driver imports
 *   tool   -> tool, nest, infra, domain (test harness, generators, simulators; never shipped in an app)
 */
const DOMAIN_BANNED = ['@nestjs/*', '@nats-io/*', 'cassandra-driver', '@grpc/*', 'better-sqlite3', 'pino', 'prom-client'];

/** Tests may also use the test harness (type:tool); production code may not. */
function depConstraints(inTests) {
  const tool = inTests ? ['type:tool'] : [];
  return [
    { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:nest', 'type:infra', 'type:domain', ...tool] },
    // A nest lib may build on another (e.g. the controller module on nest-common).
    { sourceTag: 'type:nest', onlyDependOnLibsWithTags: ['type:nest', 'type:infra', 'type:domain', ...tool] },
    { sourceTag: 'type:infra', onlyDependOnLibsWithTags: ['type:domain', ...tool] },
    {
      sourceTag: 'type:domain',
      onlyDependOnLibsWithTags: ['type:domain'],
      bannedExternalImports: DOMAIN_BANNED,
    },
    { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:tool', 'type:nest', 'type:infra', 'type:domain'] },
  ];
}

const boundaries = (inTests) => [
  'error',
  {
    enforceBuildableLibDependency: true,
    banTransitiveDependencies: true,
    // The workspace's webpack preset (root, beside jest.preset.js): build configuration, no project.
    allow: ['^(\\.\\./)+webpack\\.preset$'],
    depConstraints: depConstraints(inTests),
  },
];

export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  ...nx.configs['flat/javascript'],
  { ignores: ['**/dist', '**/node_modules', '**/tmp', '**/.cache', '**/coverage', '**/.nx'] },
  {
    files: ['**/*.ts', '**/*.js', '**/*.mjs', '**/*.cjs'],
    rules: {
      '@nx/enforce-module-boundaries': boundaries(false),
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: false }],
    },
  },
  {
    files: ['**/*.spec.ts', '**/*.int.spec.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@nx/enforce-module-boundaries': boundaries(true),
    },
  },
];
