export default {
  displayName: 'chaos',
  preset: '../../jest.preset.js',
  // Real multi-process clusters on the built bundles (nx runs the apps' builds first), one file at a time.
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
  // Reports to tmp/chaos, not docs/chaos (a tracked directory written by `npm run chaos`).
  setupFiles: ['<rootDir>/src/testing/report-dir.ts'],
  testTimeout: 600_000,
  maxWorkers: 1,
};
