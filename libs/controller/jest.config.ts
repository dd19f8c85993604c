export default {
  displayName: 'controller',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/controller',
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
};
