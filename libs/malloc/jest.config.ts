export default {
  displayName: 'malloc',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/libs/malloc',
};
