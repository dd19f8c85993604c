export default {
  displayName: 'backoff',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/libs/backoff',
};
