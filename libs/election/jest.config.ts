export default {
  displayName: 'election',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/election',
  // Real servers for *.int.spec.ts, started once per run by the harness (tools/infra).
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
};
