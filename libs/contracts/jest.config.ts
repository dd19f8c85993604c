export default {
  displayName: 'contracts',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/libs/contracts',
};
