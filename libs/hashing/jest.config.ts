export default {
  displayName: 'hashing',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/libs/hashing',
};
