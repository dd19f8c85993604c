export default {
  displayName: 'workspace-plugin',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/tools/workspace-plugin',
  testPathIgnorePatterns: ['/files/'],
};
