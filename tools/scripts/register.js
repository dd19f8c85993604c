// Lets plain `node` run the workspace's TypeScript directly (scripts, benches, app entry points in
// tests): transpile-only ts-node with decorator metadata, plus the tsconfig.base.json path aliases.
// Usage: node -r ./tools/scripts/register.js some/file.ts
const { join } = require('node:path');

process.env.TS_NODE_PROJECT = process.env.TS_NODE_PROJECT || join(__dirname, '..', '..', 'tsconfig.base.json');
process.env.TS_NODE_TRANSPILE_ONLY = 'true';
process.env.TS_NODE_COMPILER_OPTIONS = JSON.stringify({ module: 'commonjs' });
require('ts-node/register');
require('tsconfig-paths/register');
