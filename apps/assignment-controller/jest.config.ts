export default {
  displayName: 'assignment-controller',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/assignment-controller',
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
};
