export default {
  displayName: 'e2e',
  preset: '../../jest.preset.js',
  // Multi-process scenarios on built bundles (nx runs the apps' builds first), two files at a time:
  // each cluster has its own nats-server and store, and its tests wait on heartbeats and windows more
  // than they use the CPU (processing and membership were 171 + 220 s one after the other).
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
  maxWorkers: 2,
};
