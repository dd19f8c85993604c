export default {
  displayName: 'assignment',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/libs/assignment',
};
