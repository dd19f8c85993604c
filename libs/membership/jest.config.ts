export default {
  displayName: 'membership',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/libs/membership',
};
