export default {
  displayName: 'uchart',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/libs/uchart',
};
