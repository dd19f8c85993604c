// Shared Jest settings for every project. TZ is pinned so date-dependent code is deterministic.
const { join } = require('node:path');
const { pathsToModuleNameMapper } = require('ts-jest');
const { compilerOptions } = require('./tsconfig.base.json');

process.env.TZ = 'UTC';
// Nx turns FORCE_COLOR=0 into NO_COLOR=1 and then sets FORCE_COLOR for its tasks; Node 24 warns on
// stderr in every process that has both, which the tests that read a child's stderr would see.
if (process.env.FORCE_COLOR !== undefined) delete process.env.NO_COLOR;

// Packages published as ESM only that the tests load (directly or through one another).
const ESM_ONLY_PACKAGES = ['@nestjs', '@standard-schema', 'file-type'];

module.exports = {
  testEnvironment: 'node',
  testMatch: ['**/?(*.)+(spec|test).ts'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  // The same @defender/* aliases as the compiler, resolved from the workspace root.
  moduleNameMapper: pathsToModuleNameMapper(compilerOptions.paths, { prefix: join(__dirname, '/') }),
  transform: {
    // Transpile only (isolatedModules in tsconfig.base.json) with swc, see tools/jest/swc-ts.js: types
    // are checked by the `typecheck` targets, so tests start fast.
    '^.+\\.ts$': join(__dirname, 'tools/jest/swc-ts.js'),
    // NestJS 12 ships ESM only ("type": "module") and Jest loads CommonJS: those packages (and the
    // ESM-only packages they import) are compiled to CommonJS, see tools/jest/esm-to-cjs.js.
    '^.+/node_modules/.+\\.js$': join(__dirname, 'tools/jest/esm-to-cjs.js'),
  },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY_PACKAGES.join('|')})/)`],
  coverageReporters: ['text-summary', 'html'],
  // Integration tests start real servers; one worker per core is plenty on the 2-core CI machine.
  maxWorkers: 2,
  // A hang guard, not a deadline: Jest's default of 5 s per test failed tests that start a real
  // server or a worker thread on a busy machine (the SQLite store thread's start alone took longer in
  // a fresh-clone CI beside a benchmark), and 60 s ended the 3-node NATS cluster's catch-up tests beside
  // two CPU hogs while their own waits (up to 90 s each) were within bounds. Tests that need longer
  // still say so; a test that hangs costs at most this. Projects do not lower it (issue 47: 60 s in
  // tools/infra cut a wiped node's catch-up test, whose own waits are up to 150 s, in a CI run beside
  // other suites, and the next test then ran beside the cut one's restarts).
  testTimeout: 300_000,
};
