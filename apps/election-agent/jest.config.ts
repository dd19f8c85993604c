export default {
  displayName: 'election-agent',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/apps/election-agent',
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
  testTimeout: 60_000,
};
