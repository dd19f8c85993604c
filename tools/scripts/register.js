// Lets plain `node` run the workspace's TypeScript directly (scripts, benches, tools, app entry
// points in tests): the one TypeScript runner of the workspace, @swc-node/register (transpile
// only, decorator metadata and the path aliases from tsconfig.base.json).
// Usage: node -r ./tools/scripts/register.js some/file.ts
const { join } = require('node:path');

process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || join(__dirname, '..', '..', 'tsconfig.base.json');
require('@swc-node/register');
