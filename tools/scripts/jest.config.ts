export default {
  displayName: 'workspace-scripts',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  testTimeout: 60_000,
};
