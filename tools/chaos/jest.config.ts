export default {
  displayName: 'chaos',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  // Real multi-process clusters on the built bundles (nx runs the apps' builds first), one file at a time.
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
  testTimeout: 600_000,
  maxWorkers: 1,
};
