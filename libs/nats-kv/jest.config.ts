export default {
  displayName: 'nats-kv',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/nats-kv',
  // Real servers for *.int.spec.ts, started once per run by the harness (tools/infra).
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
};
