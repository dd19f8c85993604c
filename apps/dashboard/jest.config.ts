export default {
  displayName: 'dashboard',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/dashboard',
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
};
