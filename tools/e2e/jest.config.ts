export default {
  displayName: 'e2e',
  preset: '../../jest.preset.js',
  // Multi-process scenarios on built bundles (nx runs the apps' builds first), one file at a time.
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
  testTimeout: 180_000,
  maxWorkers: 1,
};
