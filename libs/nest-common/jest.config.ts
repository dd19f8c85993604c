export default {
  displayName: 'nest-common',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/nest-common',
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
};
