export default {
  displayName: 'defender',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/defender',
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  globals: { infra: ['nats'] },
};
