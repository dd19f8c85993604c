export default {
  displayName: 'infra',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/tools/infra',
  globalSetup: '<rootDir>/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/src/jest/global-teardown.ts',
  // Which real servers this project's tests need; the global setup starts only these.
  globals: { infra: ['nats', 'cassandra'] },
};
