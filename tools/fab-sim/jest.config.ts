export default {
  displayName: 'fab-sim',
  preset: '../../jest.preset.js',
  // The simulator's integration test publishes to a real nats-server and writes a real SQLite file.
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
};
