export default {
  displayName: 'scripts',
  preset: '../../jest.preset.js',
  testTimeout: 60_000,
};
