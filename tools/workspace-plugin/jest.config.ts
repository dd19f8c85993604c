export default {
  displayName: 'workspace-plugin',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/tools/workspace-plugin',
  testPathIgnorePatterns: ['/files/'],
};
